"""``aten::unflatten`` as ``Reshape`` for opsets below 13 (torch registers it from 13).

Schema: ``aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)``.
Uses the traced output shape when it is static, else builds the shape from Shape/Slice/Concat.
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix


def _int64_list(g, value):
    if symbolic_helper._is_packed_list(value):
        items = [g.op("Cast", symbolic_helper._unsqueeze_helper(g, item, [0]), to_i=7)
                 for item in symbolic_helper._unpack_list(value)]
        return g.op("Concat", *items, axis_i=0)
    return g.op("Cast", value, to_i=7)


@fix(
    "aten::unflatten",
    id="decompose.unflatten_reshape",
    strategy="decompose",
    title="unflatten via Reshape",
    description="Export unflatten as Reshape (opset 7+); ViT's attention needs it below opset 13.",
    min_opset=7,
    notes="With static traced shapes the target shape is a constant.",
    torchscript_only=("builds the target shape from the traced graph's size values (aten::size), which an "
                      "ONNX function receives as one list value"),
)
@parse_args("v", "i", "v")
def symbolic(g, self, dim, sizes):
    out_type = g.original_node.output().type() if g.original_node is not None else None
    static = out_type.sizes() if out_type is not None and out_type.kind() == "TensorType" else None
    if static is not None and all(isinstance(s, int) for s in static):
        return g.op("Reshape", self, g.op("Constant", value_t=torch.tensor(static, dtype=torch.int64)))
    rank = symbolic_helper._get_tensor_rank(self)
    dim = dim % rank
    shape = g.op("Shape", self)
    parts = [symbolic_helper._slice_helper(g, shape, axes=[0], starts=[0], ends=[dim])] if dim else []
    parts.append(_int64_list(g, sizes))
    if dim + 1 < rank:
        parts.append(symbolic_helper._slice_helper(g, shape, axes=[0], starts=[dim + 1], ends=[rank]))
    return g.op("Reshape", self, g.op("Concat", *parts, axis_i=0))
