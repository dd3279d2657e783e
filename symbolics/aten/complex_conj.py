"""``aten::conj`` / ``aten::_conj`` / ``aten::conj_physical`` on the (..., 2) layout: negate the imaginary part.

Schemas: ``aten::conj(Tensor(a) self) -> Tensor(a)``, ``aten::_conj(Tensor(a) self) -> Tensor(a)``,
``aten::conj_physical(Tensor self) -> Tensor``. A real input passes through, like torch.
"""

import torch

from fixport.symbolics.api import fix


@fix(
    "aten::conj",
    "aten::_conj",
    "aten::conj_physical",
    "aten::resolve_conj",
    id="complex.conj",
    strategy="complex",
    title="complex conjugate via Mul by (1, -1)",
    description="Flip the sign of the imaginary half of a complex number carried as a (..., 2) real tensor.",
    min_opset=1,
    notes="resolve_conj materialises a lazy conjugate: it is the identity once conj was applied.",
    torchscript_only=("complex values in the layout the TorchScript complex/FFT fixes build; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, self):
    dtype = g.original_node.inputsAt(0).type().dtype()
    if dtype is None or not dtype.is_complex or g.original_node.kind() == "aten::resolve_conj":
        return g.op("Identity", self)
    return g.op("Mul", self, g.op("Constant", value_t=torch.tensor([1.0, -1.0], dtype=torch.float32)))
