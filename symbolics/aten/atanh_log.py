"""``aten::atanh`` from Log for opsets without ONNX ``Atanh`` (below 9).

Schema: ``aten::atanh(Tensor self) -> Tensor``.
atanh(x) = 0.5 * log((1 + x) / (1 - x)); +-inf at +-1 and NaN outside like torch.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


@fix(
    "aten::atanh.default",
    id="decompose.atanh_log",
    strategy="decompose",
    title="atanh via Log",
    description="Decompose atanh into Add, Sub, Div, Log, Mul (works from opset 7).",
    min_opset=7,
    notes="From opset 9 prefer standard.atanh (one node).",
)
def symbolic(self):
    one = _like(1.0, self)
    ratio = op.Div(op.Add(one, self), op.Sub(one, self))
    return op.Mul(_like(0.5, self), op.Log(ratio))
