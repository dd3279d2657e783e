"""``aten::adaptive_avg_pool2d`` at any input size: window sums from cumulative sums.

Schema: ``aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor``.
Output cell ``i`` of an axis of size ``n`` averages input cells ``floor(i*n/o)`` to
``ceil((i+1)*n/o)``, like torch. With ``c`` the cumulative sum of the axis padded by a leading
zero, that window's sum is ``c[end] - c[start]``. The indices are computed in the graph from the
input's Shape, so the height and width can be dynamic; the sums run in float64, so the result is
exact to the input dtype's rounding.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _ints(value):
    return op.Constant(value_ints=list(value)) if isinstance(value, (list, tuple)) else op.Constant(value_int=value)


def _pool_axis(x, axis, rank, out_size):
    """Average ``x`` (float64) along ``axis`` into ``out_size`` windows, as torch's adaptive pooling."""
    size = op.Gather(op.Shape(x), _ints(axis), axis=0)
    index = op.Range(_ints(0), _ints(out_size), _ints(1))
    start = op.Div(op.Mul(index, size), _ints(out_size))  # floor: all non-negative
    end = op.Div(op.Add(op.Mul(op.Add(index, _ints(1)), size), _ints(out_size - 1)), _ints(out_size))  # ceil
    pads = [0] * (2 * rank)
    pads[axis] = 1  # one leading zero along the axis
    sums = op.CumSum(op.Pad(x, _ints(pads)), _ints(axis))
    window = op.Sub(op.Gather(sums, end, axis=axis), op.Gather(sums, start, axis=axis))
    counts = op.Reshape(op.Cast(op.Sub(end, start), to=ir.DataType.DOUBLE), _ints([out_size] + [1] * (rank - 1 - axis)))
    return op.Div(window, counts)


@fix(
    "aten::adaptive_avg_pool2d.default",
    id="decompose.adaptive_avg_pool2d_cumsum",
    strategy="decompose",
    title="adaptive average pooling via cumulative sums (any input size)",
    description=("Window bounds from the input's Shape, window sums as differences of a CumSum: keeps "
                 "dynamic height and width."),
    min_opset=11,
    notes="General: any height and width, fixed output size.",
)
def symbolic(self, output_size: list):
    if self.shape is None:
        raise RuntimeError("adaptive_avg_pool2d_cumsum needs the input's rank")
    rank = len(self.shape)
    result = op.Cast(self, to=ir.DataType.DOUBLE)
    for axis, out_size in zip((rank - 2, rank - 1), output_size):
        if out_size is not None:  # None: that axis keeps its size
            result = _pool_axis(result, axis, rank, out_size)
    return op.Cast(result, to=self.dtype or ir.DataType.FLOAT)
