"""diffusers' SD3 transformer, tiny: the latent's height and width are dynamic."""
from __future__ import annotations

import torch
from diffusers import SD3Transformer2DModel
from torch import nn

CONFIG = dict(sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8,
              num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
              pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16)
INPUT_NAMES = ["latent", "text", "pooled", "timestep"]
DYNAMIC_AXES = {"latent": {2: "height", 3: "width"}}


class Denoiser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.transformer = SD3Transformer2DModel(**CONFIG)

    def forward(self, latent: torch.Tensor, text: torch.Tensor, pooled: torch.Tensor,
                timestep: torch.Tensor) -> torch.Tensor:
        return self.transformer(latent, text, pooled, timestep, return_dict=False)[0]


def _inputs(size: int, seed: int) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(seed)
    return torch.randn(1, 4, size, size), torch.randn(1, 5, 16), torch.randn(1, 16), torch.tensor([3.0])


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Denoiser().eval(), _inputs(8, 0)


def other_inputs() -> tuple[torch.Tensor, ...]:
    return _inputs(12, 1)
