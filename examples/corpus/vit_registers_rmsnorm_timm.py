"""A tiny timm ViT with register tokens, average pooling and RMSNorm (timm's test_vit4 architecture)."""

from __future__ import annotations

import timm
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "timm ViT with register tokens and RMSNorm (aten::rms_norm)",
    "description": (
        "timm's RmsNorm calls torch.nn.functional.rms_norm when torch has it; aten::rms_norm has no "
        "symbolic at opset 17 (the ONNX op RMSNormalization arrives in opset 23)."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::rms_norm", "reason": "no_symbolic", "count": 5},
    ],
    "fix_tolerance": 1e-3,
    "notes": "norm_layer='rmsnorm' in timm selects torch's fused rms_norm.",
    "library": "timm",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """test_vit4 shrunk to 2 blocks of width 32 on 32x32 images, random weights."""
    torch.manual_seed(0)
    model = timm.create_model("test_vit4", pretrained=False, img_size=32, patch_size=8,
                              embed_dim=32, depth=2, num_heads=2, num_classes=10)
    return model.eval(), (torch.randn(1, 3, 32, 32),)
