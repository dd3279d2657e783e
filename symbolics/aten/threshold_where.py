"""``aten::threshold`` for any threshold and value: ``Where(x > threshold, x, value)``.

Schema: ``aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor``.
torch 2.14 only exports threshold=0, value=0 (as Relu); this covers every case.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


@fix(
    "aten::threshold.default",
    id="decompose.threshold_where",
    strategy="decompose",
    title="threshold via Greater + Where",
    description="Export threshold(x, th, v) as Where(x > th, x, v) for any th and v.",
    min_opset=9,
    notes="Matches torch exactly (x equal to the threshold is replaced, like torch).",
)
def symbolic(self, threshold: float, value: float):
    return op.Where(op.Greater(self, _like(threshold, self)), self, _like(value, self))
