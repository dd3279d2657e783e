"""``aten::acosh`` from Log/Sqrt for opsets without ONNX ``Acosh`` (below 9).

Schema: ``aten::acosh(Tensor self) -> Tensor``.
acosh(x) = log(x + sqrt((x - 1) * (x + 1))); NaN for x < 1 like torch.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


@fix(
    "aten::acosh.default",
    id="decompose.acosh_log",
    strategy="decompose",
    title="acosh via Log/Sqrt",
    description="Decompose acosh into Sub, Add, Mul, Sqrt, Log (works from opset 7).",
    min_opset=7,
    notes="From opset 9 prefer standard.acosh (one node).",
)
def symbolic(self):
    one = _like(1.0, self)
    product = op.Mul(op.Sub(self, one), op.Add(self, one))
    return op.Log(op.Add(self, op.Sqrt(product)))
