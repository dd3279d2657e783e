"""transformers' Mamba, tiny: the sequence length is dynamic."""
from __future__ import annotations

import torch
from torch import nn
from transformers import MambaConfig, MambaModel

INPUT_NAMES = ["input_ids"]
DYNAMIC_AXES = {"input_ids": {1: "sequence"}}


class Mamba(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = MambaModel(MambaConfig(vocab_size=64, hidden_size=16, state_size=4, num_hidden_layers=2,
                                            expand=2, conv_kernel=4, time_step_rank=2, use_cache=False))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids, use_cache=False).last_hidden_state


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Mamba().eval(), (torch.randint(0, 64, (1, 8)),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randint(0, 64, (1, 13)),)
