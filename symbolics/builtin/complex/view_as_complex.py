"""``aten::view_as_complex`` and ``aten::view_as_real`` in real arithmetic: nothing to compute.

Schemas: ``aten::view_as_complex(Tensor(a) self) -> Tensor(a)`` and ``aten::view_as_real(Tensor(a)
self) -> Tensor(a)``. ONNX has no complex tensors; Fixport carries a complex tensor as a real one
with a trailing dimension of 2 (real, imaginary), which is exactly ``view_as_real``'s layout, so
both views are an ``Identity``. Ops between them (rotary ``Mul``) need the complex-aware templates
of this family.
"""

TEMPLATE = {
    "id": "complex.view_as_complex",
    "title": "complex views as Identity on the (..., 2) layout",
    "description": "view_as_complex / view_as_real: the (real, imaginary) pair layout is the same tensor.",
    "family": "complex",
    "fits": ["aten::view_as_complex", "aten::view_as_real"],
    "min_opset": 1,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Rotary embeddings (Llama 4, DeepSeek) go view_as_complex -> complex Mul -> view_as_real.",
}


def symbolic(g, self):
    return g.op("Identity", self)
