"""timm ViT-B/16 at 224x224 (86 M parameters) in float16: half weights and a half input image."""

from __future__ import annotations

import timm
import torch
from torch import nn

from fixport.bench.real_size_models._size import quick

FIXPORT_EXAMPLE = {
    "title": "ViT-B/16 in float16 at real size",
    "description": "The whole model and its input in half precision, exported and compared on CPU.",
    "opset": 17,
    "export_options": {},
    "library": "timm",
}

TINY = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """vit_base_patch16_224 (2 blocks of width 32 under --quick) cast to float16, one half image."""
    torch.manual_seed(0)
    shape = dict(TINY) if quick() else {}
    model = timm.create_model("vit_base_patch16_224", pretrained=False, **shape).half()
    size = shape.get("img_size", 224)
    return model.eval(), (torch.randn(1, 3, size, size, dtype=torch.float16),)
