"""Deformable convolution: a torchvision C++ op with no TorchScript-exporter symbolic."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.ops import DeformConv2d

FIXPORT_EXAMPLE = {
    "title": "torchvision deform_conv2d",
    "description": (
        "torchvision.ops.deform_conv2d traces to torchvision::deform_conv2d, an op outside aten "
        "with no registered symbolic: \"ONNX export failed on an operator with unrecognized "
        "namespace torchvision::deform_conv2d\"."
    ),
    "opset": 12,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "torchvision::deform_conv2d", "reason": "custom_op", "count": 1},
    ],
    "fix_tolerance": 1e-4,
    "notes": (
        "ONNX DeformConv exists from opset 19: a symbolic mapping the C++ schema "
        "(input, weight, offset, mask, bias, stride_h, ..., use_mask) to DeformConv, exported "
        "at opset 19, runs in ONNX Runtime 1.32 (max abs diff ~5e-7). At opset 12 only a "
        "custom-domain node is possible, which exports but ONNX Runtime cannot run."
    ),
}


class DeformBlock(nn.Module):
    """A plain conv predicts per-pixel offsets that steer a deformable 3x3 conv."""

    def __init__(self, in_channels: int = 3, out_channels: int = 5) -> None:
        super().__init__()
        self.offset = nn.Conv2d(in_channels, 2 * 3 * 3, kernel_size=3, padding=1)
        self.deform = DeformConv2d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deform(x, self.offset(x))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the block in eval mode and one 1x3x10x10 input."""
    torch.manual_seed(0)
    return DeformBlock().eval(), (torch.randn(1, 3, 10, 10),)
