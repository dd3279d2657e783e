"""``aten::real`` / ``aten::imag`` on the (..., 2) complex layout: take one of the trailing pair.

Schemas: ``aten::real(Tensor(a) self) -> Tensor(a)`` and ``aten::imag(Tensor(a) self) -> Tensor(a)``.
A real input (``torch.real`` of a real tensor is the tensor itself) passes through.
"""

import torch

from fixport.symbolics.api import fix


@fix(
    "aten::real",
    "aten::imag",
    id="complex.real",
    strategy="complex",
    title="real / imag part via Gather on the trailing axis",
    description="Index 0 (real) or 1 (imaginary) of the (real, imaginary) pair a complex tensor is carried as.",
    min_opset=1,
    notes="FNet and FFT token mixers keep the real part of a Fourier transform.",
    torchscript_only=("complex values in the layout the TorchScript complex/FFT fixes build; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, self):
    source = g.original_node.inputsAt(0).type().dtype()
    if source is None or not source.is_complex:
        return g.op("Identity", self)
    part = 1 if g.original_node.kind() == "aten::imag" else 0
    return g.op("Gather", self, g.op("Constant", value_t=torch.tensor(part, dtype=torch.int64)), axis_i=-1)
