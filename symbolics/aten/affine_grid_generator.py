"""``aten::affine_grid_generator`` (2-D) as one MatMul of a constant base grid with ``theta``.

Schema: ``aten::affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor``.
The base grid holds ``(x, y, 1)`` for every output pixel, with torch's normalised coordinates
(``align_corners`` or pixel centres); ``grid = base @ theta^T``. ONNX's AffineGrid arrives only at
opset 20. Shape-specialised: the output height and width are the traced ones.
"""

import numpy as np
from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _coordinates(steps, align_corners):
    if align_corners:
        return np.linspace(-1.0, 1.0, steps) if steps > 1 else np.zeros(1)
    return (np.arange(steps, dtype=np.float64) * 2 + 1) / steps - 1


@fix(
    "aten::affine_grid_generator.default",
    id="decompose.affine_grid_generator_matmul",
    strategy="decompose",
    title="affine_grid via a constant base grid and MatMul",
    description="Sampling grid of F.affine_grid (4-D size) as base (H*W, 3) @ theta^T, reshaped to (N, H, W, 2).",
    min_opset=13,
    shape_specialised=True,
    notes="kornia's rotate/warp_affine and spatial transformers build their grids with it.",
)
def symbolic(theta, size: list, align_corners: bool):
    if len(size) != 4 or not all(isinstance(s, int) for s in size[2:]):
        raise RuntimeError("affine_grid_generator_matmul covers 4-D sizes with a static height and width")
    height, width = size[2], size[3]
    ys, xs = np.meshgrid(_coordinates(height, align_corners), _coordinates(width, align_corners), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], axis=-1).reshape(1, height * width, 3)
    base = base.astype((theta.dtype or ir.DataType.FLOAT).numpy())
    grid = op.MatMul(op.Constant(value=ir.tensor(base)), op.Transpose(theta, perm=[0, 2, 1]))
    return op.Reshape(grid, op.Constant(value_ints=[-1, height, width, 2]))
