"""Two torch.library custom ops with TorchScript symbolics but no ONNX function for dynamo."""

from __future__ import annotations

import torch
from torch import nn
from torch.onnx import symbolic_helper

FIXPORT_EXAMPLE = {
    "title": "Custom ops with only TorchScript symbolics (dynamo: no ONNX function)",
    "description": (
        "mydyn::softclip and mydyn::gate are torch.library custom ops. The file registers "
        "TorchScript symbolics for both, so the TorchScript exporter succeeds; the dynamo exporter "
        "looks in its own registry, finds no ONNX function for either and names the first only."
    ),
    "opset": 18,
    "export_options": {},
    "expected_unsupported": [],
    "expected_unsupported_dynamo": [
        {"kind": "mydyn::softclip.default", "reason": "no_onnx_function", "count": 1},
        {"kind": "mydyn::gate.default", "reason": "no_onnx_function", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix: custom_translation_table={torch.ops.mydyn.softclip.default: fn, ...} where fn is an "
        "onnxscript function (limit * Tanh(x / limit); x * Sigmoid(x))."
    ),
}


@torch.library.custom_op("mydyn::softclip", mutates_args=())
def softclip(x: torch.Tensor, limit: float) -> torch.Tensor:
    """Smoothly squash x into (-limit, limit)."""
    return limit * torch.tanh(x / limit)


@softclip.register_fake
def _softclip_fake(x: torch.Tensor, limit: float) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("mydyn::gate", mutates_args=())
def gate(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x)."""
    return x * torch.sigmoid(x)


@gate.register_fake
def _gate_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@symbolic_helper.parse_args("v", "f")
def _softclip_symbolic(g, x, limit):
    limit_value = g.op("Constant", value_t=torch.tensor(limit, dtype=torch.float32))
    return g.op("Mul", limit_value, g.op("Tanh", g.op("Div", x, limit_value)))


def _gate_symbolic(g, x):
    return g.op("Mul", x, g.op("Sigmoid", x))


torch.onnx.register_custom_op_symbolic("mydyn::softclip", _softclip_symbolic, 9)
torch.onnx.register_custom_op_symbolic("mydyn::gate", _gate_symbolic, 9)


class Blocks(nn.Module):
    """conv -> softclip(3.0) -> conv -> gate."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gate(self.conv2(softclip(self.conv1(x), 3.0)))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 1x3x16x16 input."""
    torch.manual_seed(0)
    return Blocks().eval(), (torch.randn(1, 3, 16, 16),)
