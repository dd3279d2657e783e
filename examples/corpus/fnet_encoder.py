"""A tiny FNet encoder from transformers: Fourier token mixing instead of attention."""

from __future__ import annotations

import torch
from torch import nn
from transformers import FNetConfig, FNetModel

FIXPORT_EXAMPLE = {
    "title": "FNet encoder (fft_fftn, real)",
    "description": (
        "FNet mixes tokens with torch.fft.fftn over the sequence and hidden dimensions and keeps the "
        "real part: aten::fft_fftn and aten::real have no symbolic, and their tensors are complex."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::fft_fftn", "reason": "no_symbolic", "count": 2},
        {"kind": "aten::real", "reason": "no_symbolic", "count": 2},
    ],
    "fix_tolerance": 1e-3,
    "notes": "ONNX DFT (opset 17) computes the transform on the (..., 2) real layout.",
    "library": "transformers",
}


class HiddenStates(nn.Module):
    """The encoder called with input_ids only: last hidden state out."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).last_hidden_state


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer FNet with random weights and 8 token ids."""
    torch.manual_seed(0)
    config = FNetConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        max_position_embeddings=16, tpu_short_seq_length=16)
    return HiddenStates(FNetModel(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
