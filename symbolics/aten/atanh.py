"""``aten::atanh`` as the standard ONNX ``Atanh`` op (ONNX has it since opset 9).

Schema: ``aten::atanh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.atanh_log`` template.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::atanh.default",
    id="standard.atanh",
    strategy="standard",
    title="atanh -> ONNX Atanh",
    description="Export aten::atanh as the ONNX Atanh op (opset 9+).",
    min_opset=9,
    notes="Numerically identical to torch within float32 rounding.",
)
def symbolic(self):
    return op.Atanh(self)
