"""nn.SELU: exports natively; the tutorial replaces its symbolic with an onnxscript function."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "SELU (override with an onnxscript function)",
    "description": (
        "aten::selu exports natively to ONNX Selu, so nothing is unsupported; the example is a "
        "starting point for replacing a built-in symbolic with an onnxscript function."
    ),
    "opset": 14,
    "export_options": {},
    "expected_unsupported": [],
    "fix_tolerance": 1e-5,
    "notes": (
        "The tutorial registers an onnxscript Selu (domain 'custom-onnx-script', version 1) via "
        "g.onnxscript_op and exports with custom_opsets={'custom-onnx-script': 1}. Trap, "
        "verified: its body uses CastLike, which ONNX only has from opset 15, so at opset 14 the "
        "export succeeds but ONNX Runtime refuses it (\"No Op registered for CastLike with "
        "domain_version of 14\"). At opset 15 it runs, ~2e-6 off because alpha/gamma are "
        "rounded to 1.67326/1.0507."
    ),
}


class SeluModel(nn.Module):
    """linear -> SELU."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.selu = nn.SELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.selu(self.linear(x))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 2x3 input."""
    torch.manual_seed(0)
    return SeluModel().eval(), (torch.randn(2, 3),)
