"""A two-layer torchvision VisionTransformer: its attention needs opset 13 and 14 symbolics."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models import VisionTransformer

FIXPORT_EXAMPLE = {
    "title": "Tiny ViT at opset 12 (unflatten, scaled_dot_product_attention)",
    "description": (
        "nn.MultiheadAttention traces to aten::unflatten (symbolic from opset 13) and "
        "aten::scaled_dot_product_attention (from opset 14), so at opset 12 both raise "
        "\"Exporting the operator ... to ONNX opset version 12 is not supported\"."
    ),
    "opset": 12,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::unflatten", "reason": "no_symbolic", "count": 2},
        {"kind": "aten::scaled_dot_product_attention", "reason": "no_symbolic", "count": 2},
    ],
    "fix_tolerance": 1e-4,
    "notes": (
        "One of each per encoder layer. Opsets 9-11 fail the same way, 13 fails only on "
        "scaled_dot_product_attention, 14+ exports cleanly. Linear layers are re-initialised "
        "(torchvision zero-initialises the head) so the output is not all zeros."
    ),
}


def _reset_linear_layers(model: nn.Module) -> None:
    """Give every Linear PyTorch's default random init so outputs are O(1)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.reset_parameters()


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return a 2-layer, 2-head ViT for 32x32 images and one input image."""
    torch.manual_seed(0)
    model = VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
        num_classes=10,
    )
    _reset_linear_layers(model)
    return model.eval(), (torch.randn(1, 3, 32, 32),)
