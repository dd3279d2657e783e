"""``aten::acosh`` as the standard ONNX ``Acosh`` op (ONNX has it since opset 9).

Schema: ``aten::acosh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.acosh_log`` template.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "standard.acosh",
    "title": "acosh -> ONNX Acosh",
    "description": "Export aten::acosh as the ONNX Acosh op (opset 9+).",
    "family": "standard",
    "fits": ["aten::acosh"],
    "min_opset": 9,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Numerically identical to torch within float32 rounding.",
}


@parse_args("v")
def symbolic(g, self):
    return g.op("Acosh", self)
