"""autograd.Functions without a symbolic: torch 2.14 inlines their forward at export."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "autograd.Function without symbolic (inlined)",
    "description": (
        "MyAddPyOp, MyClip and MyRelu define no symbolic, but the exporter inlines each "
        "Function's traced forward (autograd_inlining=True by default), so nothing is unsupported."
    ),
    "opset": 12,
    "export_options": {},
    "expected_unsupported": [],
    "fix_tolerance": 1e-5,
    "notes": (
        "Compare with autograd_python_op.py: the same Functions with autograd_inlining=False "
        "stay prim::PythonOp nodes and fail."
    ),
}


class MyAddPyOp(torch.autograd.Function):
    """2 * a + b."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 2 * a + b


class MyClip(torch.autograd.Function):
    """Clamp from below at ``min``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, min: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(min=min)


class MyRelu(torch.autograd.Function):
    """Clamp from below at 0."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(min=0)


class AutogradModel(nn.Module):
    """relu(clip(2 * x + y, -0.5)) through three Python autograd.Functions."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return MyRelu.apply(MyClip.apply(MyAddPyOp.apply(x, y), -0.5))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and two 2x3 inputs."""
    torch.manual_seed(0)
    return AutogradModel().eval(), (torch.randn(2, 3), torch.randn(2, 3))
