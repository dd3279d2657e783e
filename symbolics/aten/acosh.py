"""``aten::acosh`` as the standard ONNX ``Acosh`` op (ONNX has it since opset 9).

Schema: ``aten::acosh(Tensor self) -> Tensor``. torch 2.14's TorchScript exporter registers no
symbolic for it at any opset; below opset 9 use the ``decompose.acosh_log`` template.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::acosh.default",
    id="standard.acosh",
    strategy="standard",
    title="acosh -> ONNX Acosh",
    description="Export aten::acosh as the ONNX Acosh op (opset 9+).",
    min_opset=9,
    notes="Numerically identical to torch within float32 rounding.",
)
def symbolic(self):
    return op.Acosh(self)
