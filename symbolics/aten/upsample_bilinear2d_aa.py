"""``aten::_upsample_bilinear2d_aa`` (antialiased bilinear resize) as two MatMuls with constant matrices.

Schemas: ``aten::_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners,
float? scales_h=None, float? scales_w=None) -> Tensor`` and ``aten::_upsample_bilinear2d_aa.vec(
Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor``.
The resize is linear and separable, so each axis is a matrix, computed by running torch's own
kernel on an identity basis: exact to float rounding. Shape-specialised to the traced H and W.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix


def _axis_matrix(size, out_size, align_corners, dtype):
    # two identical columns: torch's antialiased kernel mis-resizes a width of 1
    basis = torch.eye(size, dtype=torch.float64).reshape(size, 1, size, 1).expand(size, 1, size, 2).contiguous()
    resized = torch.ops.aten._upsample_bilinear2d_aa(basis, [out_size, 2], align_corners)
    return resized[:, 0, :, 0].t().to(dtype).contiguous()  # (out_size, size)


@fix(
    "aten::_upsample_bilinear2d_aa",
    id="decompose.upsample_bilinear2d_aa_matmul",
    strategy="decompose",
    title="antialiased bilinear resize via constant MatMuls",
    description="y = A_h @ x @ A_w^T with A computed by torch's antialiased kernel (static shapes).",
    min_opset=9,
    shape_specialised=True,
    notes="Shape-specialised: needs static input and output sizes; ONNX Resize has antialias only from opset 18.",
    torchscript_only="not converted yet",
)
def symbolic(g, self, output_size, align_corners, *scales):
    sizes = symbolic_helper._get_tensor_sizes(self)
    out = None if symbolic_helper._is_none(output_size) else symbolic_helper._maybe_get_const(output_size, "is")
    if not sizes or any(s is None for s in sizes[-2:]) or not isinstance(out, (list, tuple)):
        raise RuntimeError("upsample_bilinear2d_aa_matmul needs static sizes and an output_size")
    corners = bool(symbolic_helper._maybe_get_const(align_corners, "b"))
    dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).dtype()
    rows = g.op("Constant", value_t=_axis_matrix(sizes[-2], out[0], corners, dtype))
    cols = g.op("Constant", value_t=_axis_matrix(sizes[-1], out[1], corners, dtype).t().contiguous())
    return g.op("MatMul", rows, g.op("MatMul", self, cols))
