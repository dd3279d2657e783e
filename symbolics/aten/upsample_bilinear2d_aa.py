"""``aten::_upsample_bilinear2d_aa`` (antialiased bilinear resize) as two MatMuls with constant matrices.

Schemas: ``aten::_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners,
float? scales_h=None, float? scales_w=None) -> Tensor`` and ``aten::_upsample_bilinear2d_aa.vec(
Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor``.
The resize is linear and separable, so each axis is a matrix, computed by running torch's own
kernel on an identity basis: exact to float rounding. Shape-specialised to the traced H and W.
"""

import numpy as np
import torch
from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _axis_matrix(size, out_size, align_corners, dtype):
    # two identical columns: torch's antialiased kernel mis-resizes a width of 1
    basis = torch.eye(size, dtype=torch.float64).reshape(size, 1, size, 1).expand(size, 1, size, 2).contiguous()
    resized = torch.ops.aten._upsample_bilinear2d_aa(basis, [out_size, 2], align_corners)
    return np.ascontiguousarray(resized[:, 0, :, 0].t().numpy().astype(dtype.numpy()))  # (out_size, size)


@fix(
    "aten::_upsample_bilinear2d_aa.vec",
    "aten::_upsample_bilinear2d_aa.default",
    id="decompose.upsample_bilinear2d_aa_matmul",
    strategy="decompose",
    title="antialiased bilinear resize via constant MatMuls",
    description="y = A_h @ x @ A_w^T with A computed by torch's antialiased kernel (static shapes).",
    min_opset=9,
    shape_specialised=True,
    notes="Shape-specialised: needs static input and output sizes; ONNX Resize has antialias only from opset 18.",
)
def symbolic(self, output_size: list, align_corners: bool, scales_h=None, scales_w=None):
    height, width = self.shape[-2:] if self.shape is not None else (None, None)
    if not (isinstance(height, int) and isinstance(width, int)) or not isinstance(output_size, (list, tuple)):
        raise RuntimeError("upsample_bilinear2d_aa_matmul needs static sizes and an output_size")
    dtype = self.dtype or ir.DataType.FLOAT
    rows = op.Constant(value=ir.tensor(_axis_matrix(height, output_size[0], align_corners, dtype)))
    cols = op.Constant(value=ir.tensor(np.ascontiguousarray(_axis_matrix(width, output_size[1], align_corners,
                                                                         dtype).T)))
    return op.MatMul(rows, op.MatMul(self, cols))
