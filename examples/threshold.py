"""nn.Threshold with a non-zero threshold: the built-in symbolic refuses it."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Threshold with a non-zero threshold",
    "description": (
        "aten::threshold has a symbolic, but it only handles threshold == 0 and value == 0 and "
        "raises \"Unsupported: ONNX export of operator threshold, non-zero threshold\"."
    ),
    "opset": 12,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::threshold", "reason": "symbolic_rejected", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": "A fix is Where(x > 0.1, x, 20) built from Greater/Where.",
}


class ThresholdModel(nn.Module):
    """y = x if x > 0.1 else 20."""

    def __init__(self) -> None:
        super().__init__()
        self.threshold = nn.Threshold(0.1, 20.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.threshold(x)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 1x3x10x10 input."""
    torch.manual_seed(0)
    return ThresholdModel().eval(), (torch.randn(1, 3, 10, 10),)
