"""SigLIP2's vision encoder (NaFlex), tiny: position embeddings resized to ``spatial_shapes`` per image."""
from __future__ import annotations

import torch
from torch import nn
from transformers import Siglip2VisionConfig, Siglip2VisionModel

PATCH = 4
PATCHES = 16


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        config = Siglip2VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     num_channels=3, patch_size=PATCH, num_patches=PATCHES)
        self.vision = Siglip2VisionModel(config)

    def forward(self, pixel_values: torch.Tensor, pixel_attention_mask: torch.Tensor,
                spatial_shapes: torch.Tensor) -> torch.Tensor:
        return self.vision(pixel_values, pixel_attention_mask, spatial_shapes).last_hidden_state


def _inputs(rows: int, columns: int, seed: int) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(seed)
    return (torch.randn(1, PATCHES, 3 * PATCH * PATCH), torch.ones(1, PATCHES, dtype=torch.long),
            torch.tensor([[rows, columns]]))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Encoder().eval(), _inputs(2, 8, 0)


def other_inputs() -> tuple[torch.Tensor, ...]:
    """The same 16 patches as an 8 x 2 image."""
    return _inputs(8, 2, 1)
