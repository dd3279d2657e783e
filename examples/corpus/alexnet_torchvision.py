"""torchvision's AlexNet on a 100x100 image: its AdaptiveAvgPool2d((6, 6)) meets a 2x2 map."""

from __future__ import annotations

import torch
import torchvision
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "torchvision AlexNet off its native size (adaptive_avg_pool2d)",
    "description": (
        "AlexNet pools its features to 6x6 whatever the input size; at 100x100 the feature map is 2x2 and "
        "6 is not a multiple of it, so the adaptive_avg_pool2d symbolic refuses."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::adaptive_avg_pool2d", "reason": "symbolic_rejected", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "VGG behaves the same off 224x224 (7x7 pool).",
    "library": "torchvision",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """AlexNet with random weights and 10 classes, one 100x100 image."""
    torch.manual_seed(0)
    model = torchvision.models.alexnet(num_classes=10)
    model.classifier = nn.Linear(256 * 6 * 6, 10)  # the 4096-wide head is 55M weights: tests stay fast
    return model.eval(), (torch.randn(1, 3, 100, 100),)
