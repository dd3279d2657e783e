"""``aten::diff`` as Slice - Slice along ``dim``, ``n`` times, after Concat of prepend/append.

Schema: ``aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)
-> Tensor``. Booleans differ by ``Xor`` (torch's ``logical_xor``), everything else by ``Sub``.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix

_END = 9223372036854775807  # Slice clamps this to the axis length


def _slice(value, dim, start, end):
    return op.Slice(value, op.Constant(value_ints=[start]), op.Constant(value_ints=[end]),
                    op.Constant(value_ints=[dim]))


@fix(
    "aten::diff.default",
    id="decompose.diff",
    strategy="decompose",
    title="diff via Slice and Sub",
    description="x[1:] - x[:-1] along dim (n times), with prepend/append concatenated first.",
    min_opset=11,
    notes="Every transformers decoder LM exported with input_ids only hits aten::diff (packed-sequence check).",
)
def symbolic(self, n: int = 1, dim: int = -1, prepend=None, append=None):
    parts = [p for p in (prepend, self, append) if p is not None]
    value = op.Concat(*parts, axis=dim) if len(parts) > 1 else self
    difference = op.Xor if self.dtype == ir.DataType.BOOL else op.Sub
    for _ in range(n):
        value = difference(_slice(value, dim, 1, _END), _slice(value, dim, 0, -1))
    return value
