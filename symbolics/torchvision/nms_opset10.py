"""``torchvision::nms`` from opset 10 with ONNX ``NonMaxSuppression`` (torchvision registers 11+).

Schema: ``torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor``.
All boxes form one batch and one class; the kept indices come out in decreasing score, like torch.
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix

_MAX_BOXES = 9223372036854775807


@fix(
    "torchvision::nms",
    id="torchvision.nms_opset10",
    strategy="torchvision",
    title="nms via NonMaxSuppression (opset 10)",
    description="One batch, one class: NonMaxSuppression, then the box column of the selected triples.",
    min_opset=10,
    notes="Boxes are (x1, y1, x2, y2) corners (center_point_box=0), as in torchvision.",
    torchscript_only=("written for TorchScript exports at opset 10; the dynamo exporter writes opset 18, "
                      "where torchvision's own conversion applies"),
)
@parse_args("v", "v", "f")
def symbolic(g, boxes, scores, iou_threshold):
    batch_boxes = symbolic_helper._unsqueeze_helper(g, boxes, [0])
    batch_scores = symbolic_helper._unsqueeze_helper(g, symbolic_helper._unsqueeze_helper(g, scores, [0]), [0])
    selected = g.op("NonMaxSuppression", batch_boxes, batch_scores,
                    g.op("Constant", value_t=torch.tensor([_MAX_BOXES], dtype=torch.int64)),
                    g.op("Constant", value_t=torch.tensor([iou_threshold], dtype=torch.float32)))
    column = g.op("Gather", selected, g.op("Constant", value_t=torch.tensor([2], dtype=torch.int64)), axis_i=1)
    return symbolic_helper._squeeze_helper(g, column, [1])
