"""``aten::histc``: equal-width bins counted with Equal against the bin indices.

Schema: ``aten::histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor``.
With ``min == max`` the range is the data's own min and max (widened by 1 when those are equal);
values outside the range are not counted and ``max`` itself falls in the last bin, like torch.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "moe.histc",
    "title": "histc via bin index + Equal + ReduceSum",
    "description": "Count values per equal-width bin: floor((x - min) * bins / (max - min)), one-hot, sum.",
    "family": "moe",
    "fits": ["aten::histc"],
    "min_opset": 13,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "MoE routers in transformers count tokens per expert with histc(expert_ids, bins=num_experts).",
}


def _const(g, value, dtype):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


@parse_args("v", "i", "f", "f")
def symbolic(g, self, bins, low, high):
    dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).dtype()
    flat = g.op("Cast", g.op("Reshape", self, _const(g, [-1], torch.int64)),
                to_i=_type_utils.JitScalarType.DOUBLE.onnx_type())
    double = torch.float64
    if low == high:  # the data's range, widened by one when it is a single value
        low_v = g.op("ReduceMin", flat, keepdims_i=0)
        high_v = g.op("ReduceMax", flat, keepdims_i=0)
        same = g.op("Equal", low_v, high_v)
        low_v = g.op("Where", same, g.op("Sub", low_v, _const(g, 1.0, double)), low_v)
        high_v = g.op("Where", same, g.op("Add", high_v, _const(g, 1.0, double)), high_v)
    else:
        low_v, high_v = _const(g, low, double), _const(g, high, double)
    position = g.op("Div", g.op("Mul", g.op("Sub", flat, low_v), _const(g, float(bins), double)),
                    g.op("Sub", high_v, low_v))
    index = g.op("Cast", g.op("Floor", position), to_i=_type_utils.JitScalarType.INT64.onnx_type())
    index = g.op("Where", g.op("Equal", flat, high_v), _const(g, bins - 1, torch.int64), index)
    inside = g.op("And", g.op("GreaterOrEqual", flat, low_v), g.op("LessOrEqual", flat, high_v))
    index = g.op("Where", inside, index, _const(g, -1, torch.int64))
    one_hot = g.op("Equal", g.op("Unsqueeze", index, _const(g, [1], torch.int64)),
                   _const(g, list(range(bins)), torch.int64))
    counts = g.op("ReduceSum", g.op("Cast", one_hot, to_i=_type_utils.JitScalarType.INT64.onnx_type()),
                  _const(g, [0], torch.int64), keepdims_i=0)
    return g.op("Cast", counts, to_i=_type_utils.JitScalarType.from_dtype(dtype).onnx_type())
