"""autograd.Function ``MyClip`` (a ``prim::PythonOp``) as ONNX Clip.

Written for ``examples/autograd_python_op.py``. Forward: ``def forward(ctx, x, min) -> x.clamp(min=min)``.
A fix naming the Function becomes its static ``symbolic`` for the export: torch calls
it as ``symbolic(g, x, min)`` and keeps inlining every other Function. A fix for one node
goes through Fixport's ``prim::PythonOp`` dispatcher instead, which picks it by Function name.
Tensor inputs arrive as Values, other ``forward`` arguments as Python values (``min`` is a float).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils

from fixport.symbolics.api import fix


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


@fix(
    "prim::PythonOp[MyClip]",
    id="autograd.my_clip",
    strategy="autograd",
    title="MyClip -> Clip",
    description="Clamp from below: Clip(x, min) with min as an input (opset 11+).",
    min_opset=11,
    notes="Same as the tutorial's dispatcher branch for MyClip.",
    torchscript_only="an autograd.Function reaches the exporter as prim::PythonOp only under TorchScript",
)
def symbolic(g, x, min):
    return g.op("Clip", x, _const_like(g, min, x))
