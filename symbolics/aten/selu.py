"""``aten::selu`` from Relu/Exp: scale * (max(0, x) + min(0, alpha * (exp(x) - 1))).

Schema: ``aten::selu(Tensor self) -> Tensor``.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


@fix(
    "aten::selu.default",
    id="decompose.selu",
    strategy="decompose",
    title="SELU via Relu/Exp",
    description="Decompose SELU into Relu, Exp, Sub, Mul, Neg (no Selu op needed).",
    min_opset=7,
    notes="Constants are torch's: alpha=1.6732632423543772, scale=1.0507009873554805.",
)
def symbolic(self):
    positive = op.Relu(self)
    negative_part = op.Neg(op.Relu(op.Neg(self)))  # min(0, x)
    elu = op.Mul(_like(ALPHA, self), op.Sub(op.Exp(negative_part), _like(1.0, self)))
    return op.Mul(_like(SCALE, self), op.Add(positive, elu))
