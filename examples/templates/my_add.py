"""autograd.Function ``MyAddPyOp`` (a ``prim::PythonOp``) as ONNX Mul/Add.

Written for ``examples/autograd_python_op.py``. Forward: ``def forward(ctx, a, b) -> 2 * a + b``.
A fix naming the Function becomes its static ``symbolic`` for the export: torch calls
it as ``symbolic(g, a, b)`` and keeps inlining every other Function. A fix for one node
goes through Fixport's ``prim::PythonOp`` dispatcher instead, which picks it by Function name.
Tensor inputs arrive as Values, other ``forward`` arguments as Python values.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils

from fixport.symbolics.api import fix


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


@fix(
    "prim::PythonOp[MyAddPyOp]",
    id="autograd.my_add",
    strategy="autograd",
    title="MyAddPyOp -> Add/Mul",
    description="2 * a + b as Mul and Add.",
    min_opset=7,
    notes="Same as the tutorial's dispatcher branch for MyAddPyOp.",
    torchscript_only="an autograd.Function reaches the exporter as prim::PythonOp only under TorchScript",
)
def symbolic(g, a, b):
    return g.op("Add", g.op("Mul", _const_like(g, 2.0, a), a), b)
