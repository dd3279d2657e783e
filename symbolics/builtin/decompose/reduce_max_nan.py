"""``aten::amax`` / ``aten::amin`` that propagate NaN, as torch does.

Schema: ``aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor`` (``amin`` alike).
torch's symbolic exports ReduceMax/ReduceMin, which ONNX Runtime computes with ``std::max``:
a NaN in the slice is skipped, so a sensor gap or an overflow disappears from the result. This
template reduces as before, then puts NaN wherever the slice held one (IsNaN, reduced with
ReduceMax over a float copy).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

TEMPLATE = {
    "id": "decompose.reduce_max_nan",
    "title": "amax/amin propagating NaN (IsNaN + Where)",
    "description": "ReduceMax/ReduceMin, then NaN where the reduced slice held a NaN (torch's semantics).",
    "family": "decompose",
    "fits": ["aten::amax", "aten::amin"],
    "min_opset": 9,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Only float inputs can hold NaN; other dtypes reduce as torch's own symbolic does.",
}


def _reduce(g, op_type: str, value, axes: list[int], keepdim: int):
    """ReduceMax/ReduceMin over ``axes`` (all axes when empty); axes are an input from opset 18."""
    if not axes:
        return g.op(op_type, value, keepdims_i=keepdim)
    if g.opset >= 18:
        return g.op(op_type, value, g.op("Constant", value_t=torch.tensor(axes, dtype=torch.int64)),
                    keepdims_i=keepdim)
    return g.op(op_type, value, axes_i=axes, keepdims_i=keepdim)


def symbolic(g, self, dim=None, keepdim=None):
    axes = [] if dim is None or symbolic_helper._is_none(dim) else list(symbolic_helper._maybe_get_const(dim, "is"))
    keep = 0 if keepdim is None or symbolic_helper._is_none(keepdim) else int(
        symbolic_helper._maybe_get_const(keepdim, "i"))
    op_type = "ReduceMin" if g.original_node.kind() == "aten::amin" else "ReduceMax"
    reduced = _reduce(g, op_type, self, axes, keep)
    scalar_type = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.UNDEFINED)
    if scalar_type not in (_type_utils.JitScalarType.FLOAT, _type_utils.JitScalarType.DOUBLE,
                           _type_utils.JitScalarType.HALF, _type_utils.JitScalarType.BFLOAT16):
        return reduced
    dtype = scalar_type.dtype()
    has_nan = _reduce(g, "ReduceMax",
                      g.op("Cast", g.op("IsNaN", self), to_i=_type_utils.JitScalarType.FLOAT.onnx_type()),
                      axes, keep)
    nan = g.op("Constant", value_t=torch.tensor(float("nan"), dtype=dtype))
    return g.op("Where", g.op("Cast", has_nan, to_i=_type_utils.JitScalarType.BOOL.onnx_type()), nan, reduced)
