"""``aten::polar`` in real arithmetic: ``(abs * cos(angle), abs * sin(angle))`` on a trailing axis.

Schema: ``aten::polar(Tensor abs, Tensor angle) -> Tensor``. The complex result is carried as a real
tensor with a trailing dimension of 2 (real, imaginary), the layout the other templates of the
``complex`` family and ONNX ``DFT`` use.
"""

import torch

from fixport.symbolics.api import fix


@fix(
    "aten::polar",
    id="complex.polar",
    strategy="complex",
    title="polar via Cos/Sin + Concat",
    description="Build the complex number abs * exp(i * angle) as a (..., 2) real tensor.",
    min_opset=13,
    notes="Rotary embeddings build their frequencies with torch.polar(ones, angles).",
    torchscript_only=("complex values in the layout the TorchScript complex/FFT fixes build; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, abs, angle):
    last = g.op("Constant", value_t=torch.tensor([-1], dtype=torch.int64))
    real = g.op("Unsqueeze", g.op("Mul", abs, g.op("Cos", angle)), last)
    imaginary = g.op("Unsqueeze", g.op("Mul", abs, g.op("Sin", angle)), last)
    return g.op("Concat", real, imaginary, axis_i=-1)
