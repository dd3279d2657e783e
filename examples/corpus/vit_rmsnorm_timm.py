"""A tiny timm ViT with parallel blocks and RMSNorm (vit_base_patch16_xp_224's architecture)."""

from __future__ import annotations

import timm
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "timm ViT-XP with RMSNorm (aten::rms_norm)",
    "description": (
        "timm's RmsNorm calls torch.nn.functional.rms_norm when torch has it; aten::rms_norm has no "
        "symbolic at opset 17 (the ONNX op RMSNormalization arrives in opset 23)."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::rms_norm", "reason": "no_symbolic", "count": 8},
    ],
    "fix_tolerance": 1e-3,
    "notes": "Pre-norm, qk-norm and final norm are all RMSNorm here.",
    "library": "timm",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """vit_base_patch16_xp_224 shrunk to 2 blocks of width 32 on 32x32 images, random weights."""
    torch.manual_seed(0)
    model = timm.create_model("vit_base_patch16_xp_224", pretrained=False, img_size=32, patch_size=8,
                              embed_dim=32, depth=2, num_heads=2, num_classes=10)
    return model.eval(), (torch.randn(1, 3, 32, 32),)
