"""A torchvision preprocessing + classifier pipeline: antialiased Resize, then MobileNetV3-Small."""

from __future__ import annotations

import torch
import torchvision
from torch import nn
from torchvision.transforms import v2

FIXPORT_EXAMPLE = {
    "title": "torchvision Resize(antialias=True) + MobileNetV3 (_upsample_bilinear2d_aa)",
    "description": (
        "Exporting the preprocessing with the model: transforms.v2.Resize on tensors is antialiased by "
        "default and traces to aten::_upsample_bilinear2d_aa, which has no symbolic (ONNX Resize gets "
        "antialias only at opset 18)."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::_upsample_bilinear2d_aa", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The downscale is linear in the image: at a static size it is two constant matrices.",
    "library": "torchvision",
}


class ResizeThenClassify(nn.Module):
    """Resize to 24x24 with antialiasing, then MobileNetV3-Small."""

    def __init__(self) -> None:
        super().__init__()
        self.resize = v2.Resize((24, 24), antialias=True)
        self.net = torchvision.models.mobilenet_v3_small(num_classes=10)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.net(self.resize(image))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The pipeline with random weights and one 64x64 image."""
    torch.manual_seed(0)
    return ResizeThenClassify().eval(), (torch.rand(1, 3, 64, 64),)
