"""A two-stage detector's RoI feature extractor on a torchvision ResNet-18 trunk: RoIAlign(aligned=True) at opset 13."""

from __future__ import annotations

import torch
import torchvision
from torch import nn
from torchvision.ops import RoIAlign

FIXPORT_EXAMPLE = {
    "title": "torchvision RoIAlign(aligned=True) RoI features at opset 13 (roi_align)",
    "description": (
        "Detectron2-style heads pool proposals with RoIAlign(aligned=True). Before opset 16 ONNX "
        "RoiAlign has no half-pixel mode; torchvision's symbolic exports it anyway with a warning, "
        "and ONNX Runtime's numbers differ from torch's: check finds the mismatch at the RoiAlign."
    ),
    "opset": 13,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "torchvision::roi_align", "reason": "mismatch", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": (
        "Opset 13: TensorRT 8.x and many NPU toolchains stop there. The pooled features are the output "
        "(the box classifier is exported on its own): check names the op an output comes out of."
    ),
    "library": "torchvision",
}


class RoiFeatures(nn.Module):
    """ResNet-18 up to stride 8, then 4x4 RoIAlign features for every proposal."""

    def __init__(self) -> None:
        super().__init__()
        trunk = torchvision.models.resnet18()
        self.trunk = nn.Sequential(trunk.conv1, trunk.bn1, trunk.relu, trunk.maxpool, trunk.layer1, trunk.layer2)
        self.pool = RoIAlign(output_size=(4, 4), spatial_scale=1 / 8, sampling_ratio=2, aligned=True)

    def forward(self, image: torch.Tensor, proposals: torch.Tensor) -> torch.Tensor:
        return self.pool(self.trunk(image), [proposals])


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The extractor with random weights, one 64x64 image and three proposals (x1, y1, x2, y2)."""
    torch.manual_seed(0)
    proposals = torch.tensor([[4.0, 6.0, 40.0, 50.0], [0.0, 0.0, 63.0, 63.0], [20.0, 10.0, 36.0, 30.0]])
    return RoiFeatures().eval(), (torch.rand(1, 3, 64, 64), proposals)
