"""``aten::upsample_bicubic2d`` as ONNX ``Resize`` (cubic, ``cubic_coeff_a=-0.75``).

Schemas: ``aten::upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners,
float? scales_h=None, float? scales_w=None) -> Tensor`` and ``aten::upsample_bicubic2d.vec(
Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor``.
Output size or scales may be runtime values; ``coordinate_transformation_mode`` is
``align_corners`` or ``pytorch_half_pixel`` like torch.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix


def _as_1d(g, value, to_type):
    """A 1-D tensor from a constant list, a packed list of scalars, or a tensor."""
    if symbolic_helper._is_packed_list(value):
        items = [symbolic_helper._unsqueeze_helper(g, item, [0])
                 for item in symbolic_helper._unpack_list(value)]
        value = g.op("Concat", *items, axis_i=0)
    return g.op("Cast", value, to_i=to_type)


@fix(
    "aten::upsample_bicubic2d",
    id="decompose.upsample_bicubic2d_resize",
    strategy="decompose",
    title="bicubic upsample via Resize (cubic)",
    description="Export bicubic interpolation as Resize(mode=cubic, cubic_coeff_a=-0.75), sizes or scales at run time.",
    min_opset=11,
    notes="Resize has no cubic mode before opset 11. antialias=True is not covered.",
    torchscript_only=("takes sizes or scales the model computes at run time as a list built in the graph, which an ONNX"
                      " function replayed into TorchScript receives as one value it cannot unpack"),
)
def symbolic(g, self, output_size, align_corners, *scales):
    mode = "align_corners" if symbolic_helper._maybe_get_const(align_corners, "b") else "pytorch_half_pixel"
    empty = g.op("Constant", value_t=torch.tensor([], dtype=torch.float32))
    int64 = _type_utils.JitScalarType.INT64.onnx_type()
    float32 = _type_utils.JitScalarType.FLOAT.onnx_type()
    resize = dict(mode_s="cubic", cubic_coeff_a_f=-0.75, coordinate_transformation_mode_s=mode,
                  nearest_mode_s="floor")
    if not symbolic_helper._is_none(output_size):
        batch_channels = symbolic_helper._slice_helper(g, g.op("Shape", self), axes=[0], starts=[0], ends=[2])
        sizes = g.op("Concat", batch_channels, _as_1d(g, output_size, int64), axis_i=0)
        return g.op("Resize", self, empty, empty, sizes, **resize)
    factors = scales[0] if len(scales) == 1 else g.op(
        "Concat", *[symbolic_helper._unsqueeze_helper(g, s, [0]) for s in scales], axis_i=0)
    ones = g.op("Constant", value_t=torch.tensor([1.0, 1.0]))
    return g.op("Resize", self, empty, g.op("Concat", ones, _as_1d(g, factors, float32), axis_i=0), **resize)
