"""``aten::diff`` as Slice - Slice along ``dim``, ``n`` times, after Concat of prepend/append.

Schema: ``aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)
-> Tensor``. Booleans differ by ``Xor`` (torch's ``logical_xor``), everything else by ``Sub``.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.diff",
    "title": "diff via Slice and Sub",
    "description": "x[1:] - x[:-1] along dim (n times), with prepend/append concatenated first.",
    "family": "decompose",
    "fits": ["aten::diff"],
    "min_opset": 11,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Every transformers decoder LM exported with input_ids only hits aten::diff (packed-sequence check).",
}

_END = 9223372036854775807  # Slice clamps this to the axis length


def _slice(g, value, dim, start, end):
    def const(v):
        return g.op("Constant", value_t=torch.tensor([v], dtype=torch.int64))
    return g.op("Slice", value, const(start), const(end), const(dim))


@parse_args("v", "i", "i", "v", "v")
def symbolic(g, self, n, dim, prepend, append):
    parts = [p for p in (prepend, self, append) if not symbolic_helper._is_none(p)]
    value = g.op("Concat", *parts, axis_i=dim) if len(parts) > 1 else self
    is_bool = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT) == \
        _type_utils.JitScalarType.BOOL
    for _ in range(n):
        later, earlier = _slice(g, value, dim, 1, _END), _slice(g, value, dim, 0, -1)
        value = g.op("Xor" if is_bool else "Sub", later, earlier)
    return value
