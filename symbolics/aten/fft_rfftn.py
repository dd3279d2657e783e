"""``aten::fft_rfft`` / ``aten::fft_rfftn`` via ONNX ``DFT`` (opset 17): one-sided on the last dimension.

Schemas: ``aten::fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor`` and
``aten::fft_rfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor``.
The real input gets a trailing 1; the output is complex in the (..., 2) layout, the last
transformed dimension keeping ``n // 2 + 1`` bins, like torch.
"""

import math

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import fix, traced_int_list


def _const(g, value):
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))


@fix(
    "aten::fft_rfft",
    "aten::fft_rfftn",
    id="fft.fft_rfftn",
    strategy="fft",
    title="real FFT via DFT (onesided)",
    description="rfft/rfftn: DFT(onesided=1) on the last dimension, full DFTs on the others.",
    min_opset=17,
    notes="Sizes (n, s) zero-pad or crop through DFT's dft_length.",
    torchscript_only="reads FFT sizes the model computes from shapes out of the TorchScript trace (traced_int_list)",
)
def symbolic(g, self, sizes=None, dims=None, norm=None):
    source = g.original_node.inputsAt(0).type()
    rank, shape = source.dim(), source.sizes()
    single = g.original_node.kind() == "aten::fft_rfft"
    dims, given = traced_int_list(g, dims, 2), traced_int_list(g, sizes, 1)
    if dims is None:  # torch: the last len(s) dims when only s is given, else all (or -1 for 1-D)
        dims = [-1] if single else list(range(rank - len(given), rank)) if given else list(range(rank))
    dims = [d % rank for d in dims]
    lengths = given or [shape[d] for d in dims]
    value = symbolic_helper._unsqueeze_helper(g, self, [rank])
    # The one-sided transform first (last listed dim), then full transforms of the rest.
    order = [len(dims) - 1] + list(range(len(dims) - 1))
    for index in order:
        value = g.op("DFT", value, _const(g, lengths[index]), axis_i=dims[index], inverse_i=0,
                     onesided_i=int(index == len(dims) - 1))
    total = math.prod(lengths)
    mode = "backward" if norm is None or symbolic_helper._is_none(norm) else symbolic_helper._maybe_get_const(norm, "s")
    scale = {"backward": 1.0, "ortho": 1.0 / math.sqrt(total), "forward": 1.0 / total}[mode]
    if scale != 1.0:
        value = g.op("Mul", value, g.op("Constant", value_t=torch.tensor(scale, dtype=torch.float32)))
    return value
