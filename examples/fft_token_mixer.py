"""An FNet-style token mixer: a 2-D Fourier transform in place of attention (complex tensors)."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "FFT token mixer (complex tensors)",
    "description": (
        "FNet mixes tokens with torch.fft.fft along the hidden and the sequence dimension and keeps "
        "the real part. The TorchScript exporter has no symbolic for aten::fft_fft or aten::real, "
        "and the unsupported nodes produce and consume complex tensors, which ONNX cannot type: "
        "the diagnosis carries them as real tensors with a trailing dimension of 2."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::fft_fft", "reason": "no_symbolic", "count": 2},
        {"kind": "aten::real", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 1e-4,
    "notes": "ONNX's DFT (opset 17) computes the same transform on a (..., 2) real layout.",
}


class FourierMixer(nn.Module):
    """x + Re(FFT_seq(FFT_hidden(x))), then a feed-forward block, each with LayerNorm."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.mix_norm = nn.LayerNorm(hidden)
        self.ff_norm = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real
        x = self.mix_norm(x + mixed)
        return self.ff_norm(x + self.feed_forward(x))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the mixer in eval mode and one sequence of 8 tokens of width 16."""
    torch.manual_seed(0)
    return FourierMixer().eval(), (torch.randn(1, 8, 16),)
