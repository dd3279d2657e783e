"""A tiny timm TinyViT (convolution stages + windowed attention with a learned bias) at opset 13."""

from __future__ import annotations

import timm
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "timm TinyViT at opset 13 (scaled_dot_product_attention)",
    "description": (
        "timm's attention blocks call F.scaled_dot_product_attention with their relative-position bias as "
        "the mask; its symbolic starts at opset 14, so at 13 (TensorRT 8.x, many NPU toolchains) every "
        "attention fails."
    ),
    "opset": 13,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::scaled_dot_product_attention", "reason": "no_symbolic", "count": 3},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The fix spells attention out as MatMul, Softmax and an added float mask.",
    "library": "timm",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """TinyViT with one block per stage and narrow widths, random weights, one 64x64 image."""
    torch.manual_seed(0)
    model = timm.create_model("tiny_vit_5m_224", pretrained=False, embed_dims=(16, 32, 64, 64),
                              depths=(1, 1, 1, 1), num_heads=(1, 2, 2, 4), num_classes=10)
    return model.eval(), (torch.randn(1, 3, 64, 64),)
