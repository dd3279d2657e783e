"""MONAI's residual UNet for 2-D segmentation, tiny."""
from __future__ import annotations

import torch
from monai.networks.nets import UNet
from torch import nn


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16, 32), strides=(2, 2), num_res_units=1)
    return model.eval(), (torch.randn(1, 1, 32, 32),)
