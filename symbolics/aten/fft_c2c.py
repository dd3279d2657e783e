"""``aten::fft_fft`` / ``aten::fft_fftn`` / ``aten::fft_ifft`` / ``aten::fft_ifftn`` via ONNX ``DFT`` (opset 17).

Schemas: ``aten::fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor``,
``aten::fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor``
(and the ``ifft`` twins). Complex tensors are real tensors with a trailing dimension of 2 (real,
imaginary), the layout ``DFT`` reads and writes; a real input gets a trailing 1. One ``DFT`` per
transformed dimension; ``norm`` ("backward", "ortho", "forward") scales like torch.
"""

import math

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import fix, traced_int_list


def _const(g, value):
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


@fix(
    "aten::fft_fft",
    "aten::fft_fftn",
    "aten::fft_ifft",
    "aten::fft_ifftn",
    id="fft.fft_c2c",
    strategy="fft",
    title="complex FFT via DFT",
    description="fft/fftn/ifft/ifftn as one DFT per dimension on the (..., 2) complex layout.",
    min_opset=17,
    notes="Sizes (n, s) pad or crop through DFT's dft_length. Complex outputs stay in the (..., 2) layout.",
    torchscript_only="reads FFT sizes the model computes from shapes out of the TorchScript trace (traced_int_list)",
)
def symbolic(g, self, sizes=None, dims=None, norm=None):
    source = g.original_node.inputsAt(0).type()
    rank = source.dim()
    is_complex = source.dtype() is not None and source.dtype().is_complex
    inverse = "ifft" in g.original_node.kind()
    single = g.original_node.kind() in ("aten::fft_fft", "aten::fft_ifft")
    dims, given = traced_int_list(g, dims, 2), traced_int_list(g, sizes, 1)
    if dims is None:  # torch: the last len(s) dims when only s is given, else all (or -1 for 1-D)
        dims = [-1] if single else list(range(rank - len(given), rank)) if given else list(range(rank))
    dims = [d % rank for d in dims]  # positive: still right with the trailing (real, imaginary) axis
    lengths = given
    value = self if is_complex else symbolic_helper._unsqueeze_helper(g, self, [rank])
    shape = source.sizes()
    total = 1
    for index, dim in enumerate(dims):
        length = lengths[index] if lengths else shape[dim]
        args = [value] + ([_const(g, length)] if lengths else [])
        value = g.op("DFT", *args, axis_i=dim, inverse_i=int(inverse), onesided_i=0)
        total *= length
    mode = "backward" if norm is None or symbolic_helper._is_none(norm) else symbolic_helper._maybe_get_const(norm, "s")
    # DFT leaves the forward transform unscaled and scales the inverse by 1/n, i.e. torch's "backward".
    scale = {"backward": 1.0, "ortho": math.sqrt(total) if inverse else 1.0 / math.sqrt(total),
             "forward": float(total) if inverse else 1.0 / total}[mode]
    if scale != 1.0:
        value = g.op("Mul", value, g.op("Constant", value_t=torch.tensor(scale, dtype=torch.float32)))
    return value
