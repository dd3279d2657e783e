"""``aten::pow.Tensor_Scalar`` with a small integer exponent as repeated Mul.

Schema: ``aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor``. torch_lib writes
Pow, which ONNX defines for float and int32/int64 only: an int8/int16 square does not load in
ONNX Runtime. Mul keeps the input's type. Other exponents: Pow in float32, cast back.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import default_params, fix


@fix(
    "aten::pow.Tensor_Scalar",
    id="onnx_function.pow_as_mul",
    strategy="onnx_function",
    title="Integer power as repeated Mul",
    description="x ** n as x * x * ... for integer n up to max_multiplications; Pow in float32 otherwise.",
    min_opset=15,
    params={"max_multiplications": {"type": "int", "default": 4, "label": "Largest exponent written as Mul"}},
    notes="Integer overflow wraps as in torch.",
)
def symbolic(self, exponent: float):
    if float(exponent).is_integer() and 1 <= exponent <= params["max_multiplications"]:
        result = self
        for _ in range(int(exponent) - 1):
            result = op.Mul(result, self)
        return result
    powered = op.Pow(op.Cast(self, to=ir.DataType.FLOAT), op.Constant(value_float=float(exponent)))
    return op.CastLike(powered, self)


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
