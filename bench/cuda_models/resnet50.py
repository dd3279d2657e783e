"""torchvision's ResNet-50 with random weights: convolutions, where TF32 shows first."""
from __future__ import annotations

import torch
from torch import nn
from torchvision.models import resnet50

FIXPORT_EXAMPLE = {
    "title": "ResNet-50 (torchvision)",
    "description": "53 convolutions and a Linear: what cuDNN runs in TF32 unless told not to.",
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [],
    "fix_tolerance": 1e-4,
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """ResNet-50 in eval mode and one 224x224 image."""
    torch.manual_seed(0)
    return resnet50(weights=None).eval(), (torch.randn(1, 3, 224, 224),)
