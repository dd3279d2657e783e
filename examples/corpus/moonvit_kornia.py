"""A tiny MoonViT (Kimi-VL's vision encoder, in kornia): 2-D rotary tables built with torch.polar."""

from __future__ import annotations

import torch
from kornia.models.kimi_vl.config import MoonViTConfig
from kornia.models.kimi_vl.moonvit import MoonViT
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "kornia MoonViT (complex rotary tables: polar, real, imag)",
    "description": (
        "MoonViT builds its 2-D rotary cos/sin tables as torch.polar(ones, angles).real and .imag: "
        "aten::polar, aten::real and aten::imag have no symbolic, and the tensor between them is complex."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::complex", "reason": "no_symbolic", "count": 4},
        {"kind": "aten::imag", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::mul", "reason": "symbolic_rejected", "count": 4},
        {"kind": "aten::polar", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::real", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::view_as_complex", "reason": "no_symbolic", "count": 4},
        {"kind": "aten::view_as_real", "reason": "no_symbolic", "count": 4},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The fixes build the complex tensor as a (..., 2) real one and take its halves.",
    "library": "kornia",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer MoonViT of width 32 on 28x28 images (4 patches of 14), random weights."""
    torch.manual_seed(0)
    config = MoonViTConfig(image_size=28, patch_size=14, init_pos_emb_height=2, init_pos_emb_width=2,
                           hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    return MoonViT(config).eval(), (torch.randn(1, 3, 28, 28),)
