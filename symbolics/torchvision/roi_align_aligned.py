"""``torchvision::roi_align`` with ``aligned=True`` before opset 16: shift the boxes by half a pixel.

Schema: ``torchvision::roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height,
SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor``. ``aligned=True`` samples at
``box * spatial_scale - 0.5``; ONNX ``RoiAlign`` before opset 16 has only the unshifted
("output_half_pixel") mode, and torchvision's symbolic exports it anyway with a warning, so the
numbers differ. Subtracting ``0.5 / spatial_scale`` from the box corners is the same sampling.
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix


def _columns(g, value, columns):
    return g.op("Gather", value, g.op("Constant", value_t=torch.tensor(columns, dtype=torch.int64)), axis_i=1)


@fix(
    "torchvision::roi_align",
    id="torchvision.roi_align_aligned",
    strategy="torchvision",
    title="roi_align(aligned=True) via RoiAlign on half-pixel-shifted boxes",
    description="RoiAlign in its output_half_pixel mode on boxes moved by -0.5 / spatial_scale (any opset from 10).",
    min_opset=10,
    notes="Differs from torch only for boxes under one pixel wide, which RoiAlign widens to 1.",
    torchscript_only=("sets RoiAlign's coordinate_transformation_mode from opset 16 only; an opset-18 ONNX function "
                      "replayed at a lower opset cannot drop that attribute"),
)
@parse_args("v", "v", "f", "i", "i", "i", "i")
def symbolic(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    batch_indices = g.op("Cast", symbolic_helper._squeeze_helper(g, _columns(g, rois, [0]), [1]),
                         to_i=torch.onnx.TensorProtoDataType.INT64)
    boxes = _columns(g, rois, [1, 2, 3, 4])
    if aligned:
        boxes = g.op("Sub", boxes, g.op("Constant", value_t=torch.tensor(0.5 / spatial_scale, dtype=torch.float32)))
    attributes = {"spatial_scale_f": spatial_scale, "output_height_i": pooled_height,
                  "output_width_i": pooled_width, "sampling_ratio_i": max(sampling_ratio, 0)}
    if g.opset >= 16:  # the default became half_pixel; the shift above already did it
        attributes["coordinate_transformation_mode_s"] = "output_half_pixel"
    return g.op("RoiAlign", input, boxes, batch_indices, **attributes)
