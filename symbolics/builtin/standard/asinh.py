"""``aten::asinh`` as the standard ONNX ``Asinh`` op (ONNX has it since opset 9).

Schema: ``aten::asinh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.asinh_log`` template.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "standard.asinh",
    "title": "asinh -> ONNX Asinh",
    "description": "Export aten::asinh as the ONNX Asinh op (opset 9+).",
    "family": "standard",
    "fits": ["aten::asinh"],
    "min_opset": 9,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Numerically identical to torch within float32 rounding.",
}


@parse_args("v")
def symbolic(g, self):
    return g.op("Asinh", self)
