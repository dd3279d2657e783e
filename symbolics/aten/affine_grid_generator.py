"""``aten::affine_grid_generator`` (2-D) as one MatMul of a constant base grid with ``theta``.

Schema: ``aten::affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor``.
The base grid holds ``(x, y, 1)`` for every output pixel, with torch's normalised coordinates
(``align_corners`` or pixel centres); ``grid = base @ theta^T``. ONNX's AffineGrid arrives only at
opset 20. Shape-specialised: the output height and width are the traced ones.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix


def _coordinates(steps, align_corners):
    if align_corners:
        return torch.linspace(-1.0, 1.0, steps) if steps > 1 else torch.zeros(1)
    return (torch.arange(steps, dtype=torch.float64) * 2 + 1) / steps - 1


@fix(
    "aten::affine_grid_generator",
    id="decompose.affine_grid_generator_matmul",
    strategy="decompose",
    title="affine_grid via a constant base grid and MatMul",
    description="Sampling grid of F.affine_grid (4-D size) as base (H*W, 3) @ theta^T, reshaped to (N, H, W, 2).",
    min_opset=13,
    shape_specialised=True,
    notes="kornia's rotate/warp_affine and spatial transformers build their grids with it.",
    torchscript_only="not converted yet",
)
def symbolic(g, theta, size, align_corners):
    sizes = g.original_node.output().type().sizes()
    if not sizes or len(sizes) != 4 or any(s is None for s in sizes[1:3]):
        raise RuntimeError("affine_grid_generator_matmul covers 4-D sizes with a static height and width")
    height, width = sizes[1], sizes[2]
    corners = bool(symbolic_helper._maybe_get_const(align_corners, "b"))
    dtype = _type_utils.JitScalarType.from_value(theta, _type_utils.JitScalarType.FLOAT).dtype()
    ys, xs = torch.meshgrid(_coordinates(height, corners), _coordinates(width, corners), indexing="ij")
    base = torch.stack([xs, ys, torch.ones_like(xs)], dim=-1).reshape(1, height * width, 3).to(dtype)
    grid = g.op("MatMul", g.op("Constant", value_t=base), g.op("Transpose", theta, perm_i=[0, 2, 1]))
    shape = g.op("Constant", value_t=torch.tensor([-1, height, width, 2], dtype=torch.int64))
    return g.op("Reshape", grid, shape)
