"""``aten::asinh`` as the standard ONNX ``Asinh`` op (ONNX has it since opset 9).

Schema: ``aten::asinh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.asinh_log`` template.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::asinh.default",
    id="standard.asinh",
    strategy="standard",
    title="asinh -> ONNX Asinh",
    description="Export aten::asinh as the ONNX Asinh op (opset 9+).",
    min_opset=9,
    notes="Numerically identical to torch within float32 rounding.",
)
def symbolic(self):
    return op.Asinh(self)
