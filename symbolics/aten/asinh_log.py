"""``aten::asinh`` from Log/Sqrt for opsets without ONNX ``Asinh`` (below 9).

Schema: ``aten::asinh(Tensor self) -> Tensor``.
asinh(x) = sign(x) * log(|x| + sqrt(x*x + 1)); the odd form avoids cancellation for x << 0.
sign is built from Less + Cast (Sign is opset 9).
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


def _sign(x):
    negative = op.Cast(op.Less(x, _like(0.0, x)), to=x.dtype or ir.DataType.FLOAT)
    return op.Sub(_like(1.0, x), op.Mul(_like(2.0, x), negative))


@fix(
    "aten::asinh.default",
    id="decompose.asinh_log",
    strategy="decompose",
    title="asinh via Log/Sqrt",
    description="Decompose asinh into Abs, Mul, Add, Sqrt, Log (works from opset 7).",
    min_opset=7,
    notes="From opset 9 prefer standard.asinh (one node).",
)
def symbolic(self):
    root = op.Sqrt(op.Add(op.Mul(self, self), _like(1.0, self)))
    return op.Mul(_sign(self), op.Log(op.Add(op.Abs(self), root)))
