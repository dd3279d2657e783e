"""timm ViT-L/16 at 224x224 (304 M parameters) with RMSNorm, random weights."""

from __future__ import annotations

import timm
import torch
from torch import nn

from fixport.bench.real_size_models._size import quick

FIXPORT_EXAMPLE = {
    "title": "ViT-L/16 with RMSNorm at real size (aten::rms_norm)",
    "description": ("timm's RmsNorm calls torch.nn.functional.rms_norm when torch has it; aten::rms_norm has no "
                    "symbolic at opset 17 (the ONNX op RMSNormalization arrives in opset 23)."),
    "opset": 17,
    "export_options": {},
    "library": "timm",
}

TINY = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """vit_large_patch16_224 with norm_layer='rmsnorm' (2 blocks of width 32 under --quick), one image."""
    torch.manual_seed(0)
    shape = dict(TINY) if quick() else {}
    model = timm.create_model("vit_large_patch16_224", pretrained=False, norm_layer="rmsnorm", **shape)
    size = shape.get("img_size", 224)
    return model.eval(), (torch.randn(1, 3, size, size),)
