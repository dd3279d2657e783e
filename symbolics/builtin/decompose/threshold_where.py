"""``aten::threshold`` for any threshold and value: ``Where(x > threshold, x, value)``.

Schema: ``aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor``.
torch 2.14 only exports threshold=0, value=0 (as Relu); this covers every case.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.threshold_where",
    "title": "threshold via Greater + Where",
    "description": "Export threshold(x, th, v) as Where(x > th, x, v) for any th and v.",
    "family": "decompose",
    "fits": ["aten::threshold"],
    "min_opset": 9,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Matches torch exactly (x equal to the threshold is replaced, like torch).",
}


@parse_args("v", "f", "f")
def symbolic(g, self, threshold, value):
    dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).dtype()
    above = g.op("Greater", self, g.op("Constant", value_t=torch.tensor(threshold, dtype=dtype)))
    return g.op("Where", above, self, g.op("Constant", value_t=torch.tensor(value, dtype=dtype)))
