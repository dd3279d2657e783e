"""Box post-processing with torchvision.ops.nms, exported at opset 10 (older TensorRT / OpenVINO)."""

from __future__ import annotations

import torch
import torchvision
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "torchvision nms at opset 10 (torchvision::nms)",
    "description": (
        "torchvision registers its nms symbolic from opset 11, though ONNX NonMaxSuppression exists "
        "from opset 10: at 10 the exporter says \"Support for this operator was added in version 11\"."
    ),
    "opset": 10,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "torchvision::nms", "reason": "custom_op", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The kept boxes come out in decreasing score, like torchvision.",
    "library": "torchvision",
}


class KeepBestBoxes(nn.Module):
    """Non-maximum suppression at IoU 0.5, then the kept boxes."""

    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return boxes[keep]


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """20 random boxes and scores."""
    torch.manual_seed(0)
    corners = torch.rand(20, 2) * 50
    boxes = torch.cat([corners, corners + 10 + torch.rand(20, 2) * 20], dim=1)
    return KeepBestBoxes().eval(), (boxes, torch.rand(20))
