"""``aten::adaptive_avg_pool2d`` at any input size: window sums from cumulative sums.

Schema: ``aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor``.
Output cell ``i`` of an axis of size ``n`` averages input cells ``floor(i*n/o)`` to
``ceil((i+1)*n/o)``, like torch. With ``c`` the cumulative sum of the axis padded by a leading
zero, that window's sum is ``c[end] - c[start]``. The indices are computed in the graph from the
input's Shape, so the height and width can be dynamic; the sums run in float64, so the result is
exact to the input dtype's rounding.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix

_INT64, _DOUBLE = 7, 11  # ONNX data types


def _constant(g, value):
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


def _pool_axis(g, x, axis, rank, out_size):
    """Average ``x`` (float64) along ``axis`` into ``out_size`` windows, as torch's adaptive pooling."""
    size = g.op("Gather", g.op("Shape", x), _constant(g, axis), axis_i=0)
    index = g.op("Range", _constant(g, 0), _constant(g, out_size), _constant(g, 1))
    start = g.op("Div", g.op("Mul", index, size), _constant(g, out_size))  # floor: all non-negative
    end = g.op("Div", g.op("Add", g.op("Mul", g.op("Add", index, _constant(g, 1)), size), _constant(g, out_size - 1)),
               _constant(g, out_size))  # ceil
    pads = [0] * (2 * rank)
    pads[axis] = 1  # one leading zero along the axis
    padded = g.op("Pad", x, _constant(g, pads))
    sums = g.op("CumSum", padded, _constant(g, axis))
    window = g.op("Sub", g.op("Gather", sums, end, axis_i=axis), g.op("Gather", sums, start, axis_i=axis))
    count_shape = [out_size] + [1] * (rank - 1 - axis)
    counts = g.op("Reshape", g.op("Cast", g.op("Sub", end, start), to_i=_DOUBLE), _constant(g, count_shape))
    return g.op("Div", window, counts)


@fix(
    "aten::adaptive_avg_pool2d",
    id="decompose.adaptive_avg_pool2d_cumsum",
    strategy="decompose",
    title="adaptive average pooling via cumulative sums (any input size)",
    description=("Window bounds from the input's Shape, window sums as differences of a CumSum: keeps "
                 "dynamic height and width."),
    min_opset=11,
    notes="General: any height and width, fixed output size.",
    torchscript_only="not converted yet",
)
@parse_args("v", "is")
def symbolic(g, self, output_size):
    rank = symbolic_helper._get_tensor_rank(self)
    if rank is None:
        raise RuntimeError("adaptive_avg_pool2d_cumsum needs the input's rank")
    scalar = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT)
    result = g.op("Cast", self, to_i=_DOUBLE)
    for axis, out_size in zip((rank - 2, rank - 1), output_size):
        if out_size is not None:  # None: that axis keeps its size
            result = _pool_axis(g, result, axis, rank, out_size)
    return g.op("Cast", result, to_i=scalar.onnx_type())
