"""transformers' EnCodec, tiny: the audio length is dynamic."""
from __future__ import annotations

import torch
from torch import nn
from transformers import EncodecConfig, EncodecModel

INPUT_NAMES = ["audio"]
DYNAMIC_AXES = {"audio": {2: "samples"}}


class Codec(nn.Module):
    """Encode and decode: the reconstructed audio."""

    def __init__(self) -> None:
        super().__init__()
        config = EncodecConfig(hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[4, 2],
                               codebook_size=32, codebook_dim=16, num_lstm_layers=1, target_bandwidths=[1.5],
                               sampling_rate=800)
        self.model = EncodecModel(config)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.model(audio).audio_values


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Codec().eval(), (torch.randn(1, 1, 600),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 1, 599),)
