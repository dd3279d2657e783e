"""``aten::fft_irfft`` / ``aten::fft_irfftn`` via ONNX ``DFT`` (opset 17): Hermitian half rebuilt, then inverse.

Schemas: ``aten::fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`` and
``aten::fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor``.
The input is complex in the (..., 2) layout. Inverse DFTs run on every dimension but the last;
there the missing bins ``X[n-k] = conj(X[k])`` are rebuilt (DFT at opset 17 has no one-sided
inverse), the inverse DFT runs and the real part is kept.
"""

import math

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import fix, traced_int_list


def _const(g, value, dtype=torch.int64):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _slice(g, value, axis, start, end, step=1):
    return g.op("Slice", value, _const(g, [start]), _const(g, [end]), _const(g, [axis]), _const(g, [step]))


@fix(
    "aten::fft_irfft",
    "aten::fft_irfftn",
    id="fft.fft_irfftn",
    strategy="fft",
    title="inverse real FFT via DFT",
    description="irfft/irfftn: inverse DFTs, the last dimension's spectrum completed by Hermitian symmetry.",
    min_opset=17,
    notes="Output length of the last dimension: s[-1] (or n), else 2 * (bins - 1), like torch.",
    torchscript_only="reads FFT sizes the model computes from shapes out of the TorchScript trace (traced_int_list)",
)
def symbolic(g, self, sizes=None, dims=None, norm=None):
    source = g.original_node.inputsAt(0).type()
    rank, shape = source.dim(), source.sizes()
    single = g.original_node.kind() == "aten::fft_irfft"
    dims, given = traced_int_list(g, dims, 2), traced_int_list(g, sizes, 1)
    if dims is None:  # torch: the last len(s) dims when only s is given, else all (or -1 for 1-D)
        dims = [-1] if single else list(range(rank - len(given), rank)) if given else list(range(rank))
    dims = [d % rank for d in dims]
    lengths = given or [shape[d] for d in dims[:-1]] + [2 * (shape[dims[-1]] - 1)]
    value = self
    if source.dtype() is None or not source.dtype().is_complex:  # a real input is a spectrum with 0 imaginary
        real_part = symbolic_helper._unsqueeze_helper(g, self, [rank])
        value = g.op("Concat", real_part, g.op("Mul", real_part, _const(g, 0.0, torch.float32)), axis_i=rank)
    for dim, length in zip(dims[:-1], lengths[:-1]):
        value = g.op("DFT", value, _const(g, length), axis_i=dim, inverse_i=1, onesided_i=0)
    last, n = dims[-1], lengths[-1]
    bins = n // 2 + 1
    half = _slice(g, value, last, 0, bins)  # crop or keep the bins that define a length-n signal
    if shape[last] < bins:
        raise RuntimeError("irfftn_dft: fewer bins than the output length needs")
    mirrored = _slice(g, half, last, n - bins, 0, -1)  # X[n-bins .. 1], reversed
    conjugate = g.op("Mul", mirrored, _const(g, [1.0, -1.0], torch.float32))
    full = g.op("Concat", half, conjugate, axis_i=last) if n - bins > 0 else half
    value = g.op("DFT", full, axis_i=last, inverse_i=1, onesided_i=0)
    real = symbolic_helper._squeeze_helper(g, _slice(g, value, rank, 0, 1), [rank])
    total = math.prod(lengths)
    mode = "backward" if norm is None or symbolic_helper._is_none(norm) else symbolic_helper._maybe_get_const(norm, "s")
    scale = {"backward": 1.0, "ortho": math.sqrt(total), "forward": float(total)}[mode]
    if scale != 1.0:
        real = g.op("Mul", real, _const(g, scale, torch.float32))
    return real
