"""autograd.Functions without a symbolic, kept as prim::PythonOp by autograd_inlining=False."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "autograd.Function without symbolic (prim::PythonOp)",
    "description": (
        "Exported with autograd_inlining=False, each Function without a symbolic stays a "
        "prim::PythonOp node, which no built-in symbolic handles: \"Couldn't export Python "
        "operator MyAddPyOp\"."
    ),
    "opset": 12,
    "export_options": {"autograd_inlining": False},
    "expected_unsupported": [
        {"kind": "prim::PythonOp", "reason": "python_op", "count": 1, "name": "MyAddPyOp"},
        {"kind": "prim::PythonOp", "reason": "python_op", "count": 1, "name": "MyClip"},
        {"kind": "prim::PythonOp", "reason": "python_op", "count": 1, "name": "MyRelu"},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix with a symbolic staticmethod on each Function, or one symbolic registered as "
        "'prim::PythonOp' that dispatches on kwargs['name'] (Mul/Add, Clip, Relu). The "
        "tutorial's '::prim_PythonOp' spelling is silently never called in torch 2.14 (it "
        "registers aten::prim_PythonOp). The error is raised by the "
        "C++ graph validation after the symbolic pass, not by _run_symbolic_function: a "
        "diagnosis pass must register a 'prim::PythonOp' symbolic to see every node. MyClip's "
        "min=-0.5 reaches that symbolic as a plain float argument, not a Value."
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
