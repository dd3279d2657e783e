"""segmentation-models-pytorch's UNet on a ResNet-18 encoder (no pretrained weights)."""
from __future__ import annotations

import segmentation_models_pytorch as smp
import torch
from torch import nn


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return smp.Unet("resnet18", encoder_weights=None, classes=2).eval(), (torch.randn(1, 3, 64, 64),)
