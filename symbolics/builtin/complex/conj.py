"""``aten::conj`` / ``aten::_conj`` / ``aten::conj_physical`` on the (..., 2) layout: negate the imaginary part.

Schemas: ``aten::conj(Tensor(a) self) -> Tensor(a)``, ``aten::_conj(Tensor(a) self) -> Tensor(a)``,
``aten::conj_physical(Tensor self) -> Tensor``. A real input passes through, like torch.
"""

import torch

TEMPLATE = {
    "id": "complex.conj",
    "title": "complex conjugate via Mul by (1, -1)",
    "description": "Flip the sign of the imaginary half of a complex number carried as a (..., 2) real tensor.",
    "family": "complex",
    "fits": ["aten::conj", "aten::_conj", "aten::conj_physical", "aten::resolve_conj"],
    "min_opset": 1,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "resolve_conj materialises a lazy conjugate: it is the identity once conj was applied.",
}


def symbolic(g, self):
    dtype = g.original_node.inputsAt(0).type().dtype()
    if dtype is None or not dtype.is_complex or g.original_node.kind() == "aten::resolve_conj":
        return g.op("Identity", self)
    return g.op("Mul", self, g.op("Constant", value_t=torch.tensor([1.0, -1.0], dtype=torch.float32)))
