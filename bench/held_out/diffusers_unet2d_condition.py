"""diffusers' text-conditioned UNet (Stable Diffusion's), tiny: cross-attention, timestep embedding."""
from __future__ import annotations

import torch
from diffusers import UNet2DConditionModel
from torch import nn


class Denoiser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.unet = UNet2DConditionModel(
            sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8)

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        return self.unet(sample, timestep, encoder_hidden_states=text).sample


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Denoiser().eval(), (torch.randn(1, 4, 16, 16), torch.tensor([10]), torch.randn(1, 8, 32))


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return torch.randn(1, 4, 16, 16), torch.tensor([700]), torch.randn(1, 8, 32)
