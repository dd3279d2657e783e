"""An autograd.Function that leaves torch for numpy: the export silently bakes a constant."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "autograd.Function computing in numpy (baked constant)",
    "description": (
        "NumpyTanh.forward calls np.tanh on x.numpy(), which the tracer cannot see: it warns "
        "\"Converting a tensor to a NumPy array might cause the trace to be incorrect\" and "
        "records the result as a constant, so export succeeds with a wrong graph."
    ),
    "opset": 13,
    "export_options": {},
    # x's values reach numpy: check runs other values of x, where the outputs differ
    "expected_unsupported": [{"kind": "aten::linear", "reason": "baked_input", "count": 1}],
    "fix_tolerance": 1e-5,
    "notes": (
        "Exports and runs in ONNX Runtime and matches torch on the example input (diff ~1e-7), "
        "but the tanh branch is a baked Constant, so on a fresh random input the outputs differ "
        "by 0.3-0.5: check and compare run other values of x, which the trace warned it baked. Fix: "
        "write forward with torch.tanh, or give NumpyTanh a symbolic returning g.op('Tanh', x)."
    ),
}


class NumpyTanh(torch.autograd.Function):
    """tanh computed by numpy, invisible to the tracer."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        # clone(): without it the traced constant is the Function's own output, which autograd
        # marks requires_grad, and export fails on aten::lift_fresh unless run under no_grad.
        return torch.from_numpy(np.tanh(x.detach().numpy())).clone()


class NumpyTanhModel(nn.Module):
    """linear -> (h + numpy tanh(h)) -> linear; the skip path keeps the input live."""

    def __init__(self) -> None:
        super().__init__()
        self.encode = nn.Linear(4, 8)
        self.decode = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.encode(x)
        return self.decode(hidden + NumpyTanh.apply(hidden))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 3x4 input."""
    torch.manual_seed(0)
    return NumpyTanhModel().eval(), (torch.randn(3, 4),)
