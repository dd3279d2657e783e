"""torchvision's VGG-11 on an 80x80 image: its AdaptiveAvgPool2d((7, 7)) meets a 2x2 map."""

from __future__ import annotations

import torch
import torchvision
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "torchvision VGG-11 off its native size (adaptive_avg_pool2d)",
    "description": (
        "VGG pools its features to 7x7 whatever the input size; at 80x80 the feature map is 2x2 and "
        "7 is not a multiple of it, so the adaptive_avg_pool2d symbolic refuses."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::adaptive_avg_pool2d", "reason": "symbolic_rejected", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The pooled 7x7 map feeds the 25088-wide classifier, so the pool cannot be dropped.",
    "library": "torchvision",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """VGG-11 with random weights and 10 classes, one 80x80 image."""
    torch.manual_seed(0)
    model = torchvision.models.vgg11(num_classes=10)
    model.classifier = nn.Linear(512 * 7 * 7, 10)  # the 4096-wide head is 100M weights: tests stay fast
    return model.eval(), (torch.randn(1, 3, 80, 80),)
