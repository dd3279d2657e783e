"""``aten::unsqueeze`` on complex values: the new axis placed before the (real, imag) axis.

Schema: ``aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)``. The dynamo exporter carries a
complex tensor as a real one with a trailing axis of 2 (real, imag); torch_lib has no complex
unsqueeze. A negative ``dim`` counts from the end of the complex shape, so it moves one place
left in the real layout; a positive one stays.
"""

from onnxscript.onnx_opset import opset18 as op

TEMPLATE = {
    "id": "dynamo.complex_unsqueeze",
    "title": "Unsqueeze on complex values",
    "description": "Unsqueeze the complex tensor's real layout, keeping the (real, imag) axis last.",
    "family": "dynamo_translation",
    "fits": ["aten::unsqueeze.default"],
    "min_opset": 18,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Registered for complex inputs only: real tensors keep torch_lib's unsqueeze.",
    "complex_inputs": True,
}

params = {}


def symbolic(self, dim: int):
    return op.Unsqueeze(self, op.Constant(value_ints=[dim - 1 if dim < 0 else dim]))
