"""``aten::cumsum`` that also takes booleans: cast to int64 first (ONNX ``CumSum`` has no bool type).

Schema: ``aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor``. torch sums a
bool tensor as int64; the exporters hand the bool to ``CumSum`` and ONNX Runtime refuses the
model. Other dtypes export as torch does (``CumSum``, then the requested dtype).
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::cumsum.default",
    id="decompose.cumsum_bool",
    strategy="decompose",
    title="cumsum with a bool input cast to int64",
    description="CumSum over dim; a bool input is cast to int64 first, like torch's type promotion.",
    min_opset=11,
    notes="transformers' packed-sequence check sums (diff != 1), a bool tensor.",
)
def symbolic(self, dim: int, dtype: int = -1):
    if self.dtype == ir.DataType.BOOL:
        self = op.Cast(self, to=ir.DataType.INT64)
    result = op.CumSum(self, op.Constant(value_int=dim))
    return result if dtype is None or dtype == -1 else op.Cast(result, to=int(dtype))
