"""``aten::_conj_physical`` on complex values: the imaginary part negated.

Schema: ``aten::_conj_physical(Tensor self) -> Tensor``. Both exporters carry a complex tensor
as a real one with a trailing axis of 2 (real, imag); torch_lib conjugates ``aten::conj`` this
way but has no ``_conj_physical``, which torch's ``ihfft`` calls. One ONNX function for both
exporters, for complex inputs only.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::_conj_physical.default",
    id="onnx_function.complex_conj_physical",
    strategy="onnx_function",
    title="Conjugate on complex values",
    description="Multiply the (real, imag) axis by (1, -1).",
    min_opset=13,
    notes="Registered for complex inputs only.",
    complex_inputs=True,
)
def symbolic(self):
    return op.Mul(self, op.Constant(value=ir.tensor([1.0, -1.0], dtype=self.dtype)))
