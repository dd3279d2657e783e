"""A tiny timm PVT-v2 "li" (linear spatial-reduction attention): keys pooled to a fixed 7x7 grid."""

from __future__ import annotations

import timm
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "timm PVT-v2-li (adaptive_avg_pool2d to 7x7)",
    "description": (
        "The linear variant of PVT-v2 pools keys and values to 7x7 with AdaptiveAvgPool2d(7); for a "
        "feature map whose size 7 does not divide, the symbolic refuses: \"output size that are not "
        "factor of input size\"."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::adaptive_avg_pool2d", "reason": "symbolic_rejected", "count": 4},
    ],
    "fix_tolerance": 1e-3,
    "notes": "96x96 input: stage maps of 24, 12, 6 and 3 pixels, none a multiple of 7.",
    "library": "timm",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """pvt_v2_b2_li with one block per stage and narrow widths, random weights, one 96x96 image."""
    torch.manual_seed(0)
    model = timm.create_model("pvt_v2_b2_li", pretrained=False, embed_dims=(16, 32, 32, 64),
                              depths=(1, 1, 1, 1), num_heads=(1, 2, 2, 4), num_classes=10)
    return model.eval(), (torch.randn(1, 3, 96, 96),)
