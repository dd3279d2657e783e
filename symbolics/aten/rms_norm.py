"""``aten::rms_norm`` from Mul/ReduceMean/Sqrt: ``x / sqrt(mean(x**2) + eps) * weight``.

Schema: ``aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None,
float? eps=None) -> Tensor``. Without ``eps`` torch uses the machine epsilon of the input's dtype.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix

_MACHINE_EPSILON = {ir.DataType.FLOAT: 2.0 ** -23, ir.DataType.DOUBLE: 2.0 ** -52,
                    ir.DataType.FLOAT16: 2.0 ** -10, ir.DataType.BFLOAT16: 2.0 ** -7}


@fix(
    "aten::rms_norm.default",
    id="decompose.rms_norm",
    strategy="decompose",
    title="RMSNorm via ReduceMean + Sqrt",
    description="Normalise by the root mean square over the last dims, then scale by the weight.",
    min_opset=13,
    notes="Computed in the input's dtype, like torch's CPU kernel for float32.",
)
def symbolic(input, normalized_shape: list, weight=None, eps: float = None):  # noqa: A002 -- the schema's name
    dtype = input.dtype or ir.DataType.FLOAT
    epsilon = _MACHINE_EPSILON.get(dtype, 2.0 ** -23) if eps is None else eps
    axes = op.Constant(value_ints=list(range(-len(normalized_shape), 0)))
    mean_square = op.ReduceMean(op.Mul(input, input), axes, keepdims=1)
    root = op.Sqrt(op.Add(mean_square, op.Constant(value=ir.tensor(epsilon, dtype=dtype))))
    normed = op.Div(input, root)
    return normed if weight is None else op.Mul(normed, weight)
