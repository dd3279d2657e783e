"""``aten::atanh`` as the standard ONNX ``Atanh`` op (ONNX has it since opset 9).

Schema: ``aten::atanh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.atanh_log`` template.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "standard.atanh",
    "title": "atanh -> ONNX Atanh",
    "description": "Export aten::atanh as the ONNX Atanh op (opset 9+).",
    "family": "standard",
    "fits": ["aten::atanh"],
    "min_opset": 9,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Numerically identical to torch within float32 rounding.",
}


@parse_args("v")
def symbolic(g, self):
    return g.op("Atanh", self)
