"""Qwen2.5-VL's vision tower, tiny: windowed attention over patches laid out by ``grid_thw``.

``grid_thw`` (frames, rows, columns of patches) is read as Python numbers in forward: a trace that
bakes it in is right only for the grid it saw.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel

CONFIG = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, in_channels=3, patch_size=4,
              spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=32, window_size=16,
              fullatt_block_indexes=[1])
PATCH_VALUES = 3 * 2 * 4 * 4  # channels x temporal patch x patch x patch


class VisionTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.visual = Qwen2_5_VisionTransformerPretrainedModel._from_config(Qwen2_5_VLVisionConfig(**CONFIG))

    def forward(self, patches: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        out = self.visual(patches, grid_thw=grid_thw)
        return out if isinstance(out, torch.Tensor) else out.pooler_output


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return VisionTower().eval(), (torch.randn(32, PATCH_VALUES), torch.tensor([[1, 4, 8]]))


def other_inputs() -> tuple[torch.Tensor, ...]:
    """The same 32 patches laid out as 8 rows of 4."""
    torch.manual_seed(1)
    return torch.randn(32, PATCH_VALUES), torch.tensor([[1, 8, 4]])
