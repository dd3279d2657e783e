"""``aten::histc``: equal-width bins counted with Equal against the bin indices.

Schema: ``aten::histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor``.
With ``min == max`` the range is the data's own min and max (widened by 1 when those are equal);
values outside the range are not counted and ``max`` itself falls in the last bin, like torch.
MoE routers in transformers count tokens per expert with ``histc(expert_ids, bins=num_experts)``.
One ONNX function for both exporters.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix

_INT64, _DOUBLE = 7, 11  # ONNX data types


def _double(value):
    return op.Cast(op.Constant(value_float=float(value)), to=_DOUBLE)


def _int64(value):
    return op.Constant(value_int=value) if isinstance(value, int) else op.Constant(value_ints=list(value))


@fix(
    "aten::histc.default",
    id="onnx_function.histc",
    strategy="onnx_function",
    title="histc via bin index + Equal + ReduceSum",
    description="Count values per equal-width bin: floor((x - min) * bins / (max - min)), one-hot, sum.",
    min_opset=13,
    notes="The bin positions are computed in float64, the range bounds as the input's float32.",
)
def symbolic(self, bins: int = 100, min: float = 0.0, max: float = 0.0):  # noqa: A002 -- the schema's names
    flat = op.Cast(op.Reshape(self, _int64([-1])), to=_DOUBLE)
    if min == max:  # the data's range, widened by one when it is a single value
        low, high = op.ReduceMin(flat, keepdims=0), op.ReduceMax(flat, keepdims=0)
        same = op.Equal(low, high)
        low = op.Where(same, op.Sub(low, _double(1.0)), low)
        high = op.Where(same, op.Add(high, _double(1.0)), high)
    else:
        low, high = _double(min), _double(max)
    position = op.Div(op.Mul(op.Sub(flat, low), _double(bins)), op.Sub(high, low))
    index = op.Cast(op.Floor(position), to=_INT64)
    index = op.Where(op.Equal(flat, high), _int64(bins - 1), index)
    inside = op.And(op.GreaterOrEqual(flat, low), op.LessOrEqual(flat, high))
    index = op.Where(inside, index, _int64(-1))
    one_hot = op.Equal(op.Unsqueeze(index, _int64([1])), _int64(range(bins)))
    counts = op.ReduceSum(op.Cast(one_hot, to=_INT64), _int64([0]), keepdims=0)
    return op.Cast(counts, to=self.dtype) if self.dtype is not None else op.CastLike(counts, self)
