"""A torch.library custom op defined in Python: traced as mylib::softclip, unknown to ONNX."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "torch.library custom op (mylib::softclip)",
    "description": (
        "softclip is registered with torch.library.custom_op, so torch.jit.trace records an "
        "opaque mylib::softclip node; export raises \"ONNX export failed on an operator with "
        "unrecognized namespace mylib::softclip\"."
    ),
    "opset": 12,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "mylib::softclip", "reason": "custom_op", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix: register_custom_op_symbolic('mylib::softclip', fn, 12) where fn builds "
        "limit * Tanh(x / limit) from standard ONNX ops; 'limit' arrives as a constant float."
    ),
}


@torch.library.custom_op("mylib::softclip", mutates_args=())
def softclip(x: torch.Tensor, limit: float) -> torch.Tensor:
    """Smoothly squash x into (-limit, limit)."""
    return limit * torch.tanh(x / limit)


@softclip.register_fake
def _softclip_fake(x: torch.Tensor, limit: float) -> torch.Tensor:
    return torch.empty_like(x)


class SoftClipModel(nn.Module):
    """conv -> softclip(3.0) -> conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(softclip(self.conv1(x), 3.0))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 1x3x16x16 input."""
    torch.manual_seed(0)
    return SoftClipModel().eval(), (torch.randn(1, 3, 16, 16),)
