"""Bicubic upsampling by a factor fed at run time (an SRCNN-style super-resolution head)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Bicubic upsampling with a runtime scale (opset 10)",
    "description": (
        "The output size is computed from the 'factor' input tensor, then "
        "F.interpolate(mode='bicubic') traces to aten::upsample_bicubic2d, whose symbolic starts "
        "at opset 11: \"Exporting the operator 'aten::upsample_bicubic2d' to ONNX opset version "
        "10 is not supported\"."
    ),
    "opset": 10,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::upsample_bicubic2d", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-4,
    "notes": (
        "Opset 9 fails the same way. ONNX Resize only gains mode='cubic' at opset 11, so the "
        "fix is opset 11 (a Resize whose sizes come from 'factor'; checked in ONNX Runtime for "
        "factors 2 and 3, max diff ~4e-6). Passing scale_factor=factor.tolist() instead would "
        "bake the factor into the graph as a constant."
    ),
}


class SuperResolution(nn.Module):
    """Upsample by a per-axis factor given as a tensor, then refine with two convs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=5, padding=2)
        self.conv2 = nn.Conv2d(16, 3, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
        height = (x.shape[2] * factor[0]).to(torch.int64)
        width = (x.shape[3] * factor[1]).to(torch.int64)
        x = F.interpolate(x, size=(height, width), mode="bicubic", align_corners=False)
        return self.conv2(torch.relu(self.conv1(x)))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode, a 1x3x16x16 image and the factor tensor [2.0, 2.0]."""
    torch.manual_seed(0)
    return SuperResolution().eval(), (torch.randn(1, 3, 16, 16), torch.tensor([2.0, 2.0]))
