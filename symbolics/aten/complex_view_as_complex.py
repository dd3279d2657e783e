"""``aten::view_as_complex`` and ``aten::view_as_real`` in real arithmetic: nothing to compute.

Schemas: ``aten::view_as_complex(Tensor(a) self) -> Tensor(a)`` and ``aten::view_as_real(Tensor(a)
self) -> Tensor(a)``. ONNX has no complex tensors; Fixport carries a complex tensor as a real one
with a trailing dimension of 2 (real, imaginary), which is exactly ``view_as_real``'s layout, so
both views are an ``Identity``. Ops between them (rotary ``Mul``) need the complex-aware templates
of this family.
"""

from fixport.symbolics.api import fix


@fix(
    "aten::view_as_complex",
    "aten::view_as_real",
    id="complex.view_as_complex",
    strategy="complex",
    title="complex views as Identity on the (..., 2) layout",
    description="view_as_complex / view_as_real: the (real, imaginary) pair layout is the same tensor.",
    min_opset=1,
    notes="Rotary embeddings (Llama 4, DeepSeek) go view_as_complex -> complex Mul -> view_as_real.",
    torchscript_only=("complex values in the layout the TorchScript complex/FFT fixes build; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, self):
    return g.op("Identity", self)
