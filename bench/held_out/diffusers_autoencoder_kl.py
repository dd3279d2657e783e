"""diffusers' VAE decoder (AutoencoderKL), tiny: group norms, mid-block attention, upsampling."""
from __future__ import annotations

import torch
from diffusers import AutoencoderKL
from torch import nn


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.vae = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(32, 64), latent_channels=4,
                                 down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                                 norm_num_groups=8, sample_size=32)

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        return self.vae.decode(latents).sample


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Decoder().eval(), (torch.randn(1, 4, 8, 8),)
