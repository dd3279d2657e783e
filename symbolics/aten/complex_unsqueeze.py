"""``aten::unsqueeze`` on complex values: the new axis placed before the (real, imag) axis.

Schema: ``aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)``. Both exporters carry a complex
tensor as a real one with a trailing axis of 2 (real, imag); torch_lib has no complex unsqueeze.
A negative ``dim`` counts from the end of the complex shape, so it moves one place left in the
real layout; a positive one stays. One ONNX function for both exporters, for complex inputs only.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::unsqueeze.default",
    id="onnx_function.complex_unsqueeze",
    strategy="onnx_function",
    title="Unsqueeze on complex values",
    description="Unsqueeze the complex tensor's real layout, keeping the (real, imag) axis last.",
    min_opset=13,
    notes="For complex inputs only: real tensors keep the exporter's own unsqueeze.",
    complex_inputs=True,
)
def symbolic(self, dim: int):
    return op.Unsqueeze(self, op.Constant(value_ints=[dim - 1 if dim < 0 else dim]))
