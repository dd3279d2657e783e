"""An int16 square: the dynamo exporter emits Pow on int16, which ONNX Runtime rejects."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "int16 square (dynamo: ONNX Runtime error)",
    "description": (
        "torch.square on an int16 tensor. The TorchScript exporter writes Mul, which runs; the "
        "dynamo exporter's torch_lib writes Pow, which has no int16 type in ONNX, so ONNX "
        "Runtime refuses to load the model."
    ),
    "opset": 18,
    "export_options": {},
    "expected_unsupported": [],
    "expected_unsupported_dynamo": [
        {"kind": "aten::pow.Tensor_Scalar", "reason": "runtime_error", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": "Fix: translate aten::pow.Tensor_Scalar with exponent 2 as Mul(x, x), or square in int32.",
}


class Quantized(nn.Module):
    """Quantize to int16 levels, square them, scale back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = torch.round(x * 10).to(torch.int16)
        return torch.square(levels).to(torch.float32) / 100.0


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model and one 2x4 input."""
    torch.manual_seed(0)
    return Quantized().eval(), (torch.rand(2, 4),)
