"""torchvision resnet18 with random weights: a model that exports cleanly (the control case)."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models import resnet18

FIXPORT_EXAMPLE = {
    "title": "ResNet-18 (exports cleanly)",
    "description": (
        "Every op in ResNet-18 has a symbolic at opset 17, so the export succeeds and ONNX "
        "Runtime matches torch; use it to check the clean path end to end."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [],
    "expected_unsupported_dynamo": [],
    "fix_tolerance": 1e-4,
    "notes": "11.7M parameters (random weights); export takes well under a second on CPU.",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return resnet18 (weights=None) in eval mode and one 1x3x64x64 input."""
    torch.manual_seed(0)
    return resnet18(weights=None).eval(), (torch.randn(1, 3, 64, 64),)
