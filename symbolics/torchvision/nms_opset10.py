"""``torchvision::nms`` from opset 10 with ONNX ``NonMaxSuppression`` (torchvision registers 11+).

Schema: ``torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor``.
All boxes form one batch and one class; the kept indices come out in decreasing score, like torch.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix

_MAX_BOXES = 9223372036854775807


@fix(
    "torchvision::nms.default",
    id="torchvision.nms_opset10",
    strategy="torchvision",
    title="nms via NonMaxSuppression (opset 10)",
    description="One batch, one class: NonMaxSuppression, then the box column of the selected triples.",
    min_opset=10,
    notes="Boxes are (x1, y1, x2, y2) corners (center_point_box=0), as in torchvision.",
)
def symbolic(dets, scores, iou_threshold: float):
    batch_boxes = op.Unsqueeze(dets, op.Constant(value_ints=[0]))
    batch_scores = op.Unsqueeze(scores, op.Constant(value_ints=[0, 1]))
    selected = op.NonMaxSuppression(batch_boxes, batch_scores, op.Constant(value_ints=[_MAX_BOXES]),
                                    op.Constant(value=ir.tensor([iou_threshold], dtype=ir.DataType.FLOAT)))
    column = op.Gather(selected, op.Constant(value_ints=[2]), axis=1)
    return op.Squeeze(column, op.Constant(value_ints=[1]))
