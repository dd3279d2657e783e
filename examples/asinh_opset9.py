"""torch.asinh: an op ONNX has (Asinh, opset 9) but the TorchScript exporter never maps."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "asinh with no symbolic (opset 9)",
    "description": (
        "torch.asinh traces to aten::asinh, which has no symbolic at any opset, so export raises "
        "\"Exporting the operator 'aten::asinh' to ONNX opset version 9 is not supported\"."
    ),
    "opset": 9,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::asinh", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "ONNX has had Asinh since opset 9, yet torch 2.14 registers no aten::asinh symbolic at "
        "any opset (9-20 checked), so raising the opset does not help: a one-line symbolic "
        "g.op('Asinh', x) registered for opset 9 is the fix."
    ),
}


class AsinhModel(nn.Module):
    """Applies asinh element-wise after a small linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.asinh(self.linear(x))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 2x3 input."""
    torch.manual_seed(0)
    return AsinhModel().eval(), (torch.randn(2, 3),)
