"""``aten::mul`` that knows complex tensors: ``(a + bi)(c + di) = (ac - bd) + (ad + bc)i``.

Schemas: ``aten::mul.Tensor(Tensor self, Tensor other) -> Tensor`` and ``aten::mul.Scalar(Tensor
self, Scalar other) -> Tensor``. Complex tensors are real ones with a trailing (real, imaginary)
axis. complex x complex is the product above; complex x real tensor broadcasts the real one over
that axis; complex x scalar is a plain Mul. Without complex operands the node is exported by
torch's own symbolic, unchanged.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils

from fixport.symbolics.api import fix, torch_symbolic


def _is_complex(value):
    value_type = value.type()
    return isinstance(value_type, torch._C.TensorType) and value_type.dtype() is not None \
        and value_type.dtype().is_complex


def _is_tensor(value):
    value_type = value.type()
    return isinstance(value_type, torch._C.TensorType) and (value_type.dim() or 0) > 0


def _part(g, value, index):
    return g.op("Gather", value, g.op("Constant", value_t=torch.tensor(index, dtype=torch.int64)), axis_i=-1)


def _pair(g, real, imaginary):
    last = g.op("Constant", value_t=torch.tensor([-1], dtype=torch.int64))
    return g.op("Concat", g.op("Unsqueeze", real, last), g.op("Unsqueeze", imaginary, last), axis_i=-1)


@fix(
    "aten::mul",
    id="complex.mul",
    strategy="complex",
    title="complex-aware Mul (real arithmetic)",
    description="Multiply complex numbers carried as (..., 2) real tensors; real products stay torch's.",
    min_opset=13,
    notes="Rotary embeddings multiply view_as_complex(q) by the complex frequencies.",
    torchscript_only=("falls back to torch's own TorchScript symbolic for real inputs; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, self, other):
    traced_self, traced_other = g.original_node.inputsAt(0), g.original_node.inputsAt(1)
    left, right = _is_complex(traced_self), _is_complex(traced_other)
    if not left and not right:
        return torch_symbolic(g)(g, self, other)
    if left and right:
        a, b, c, d = _part(g, self, 0), _part(g, self, 1), _part(g, other, 0), _part(g, other, 1)
        return _pair(g, g.op("Sub", g.op("Mul", a, c), g.op("Mul", b, d)),
                     g.op("Add", g.op("Mul", a, d), g.op("Mul", b, c)))
    complex_value, real_value, traced_real = (self, other, traced_other) if left else (other, self, traced_self)
    if _is_tensor(traced_real):  # broadcast the real tensor over the (real, imaginary) axis
        real_value = g.op("Unsqueeze", real_value, g.op("Constant", value_t=torch.tensor([-1], dtype=torch.int64)))
    part_type = {torch.complex128: torch.float64, torch.complex32: torch.float16}.get(
        (traced_self if left else traced_other).type().dtype(), torch.float32)
    return g.op("Mul", complex_value, g.op("Cast", real_value, to_i=_type_utils.JitScalarType.from_dtype(part_type)
                                           .onnx_type()))
