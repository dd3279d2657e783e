"""MONAI's SwinUNETR (2-D), tiny: shifted-window attention with masks built from the input size."""
from __future__ import annotations

import torch
from monai.networks.nets import SwinUNETR
from torch import nn


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = SwinUNETR(in_channels=1, out_channels=2, feature_size=12, spatial_dims=2, depths=(1, 1, 1, 1),
                      num_heads=(1, 1, 2, 2))
    return model.eval(), (torch.randn(1, 1, 64, 64),)
