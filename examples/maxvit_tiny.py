"""A one-block-per-stage torchvision MaxViT: its relative-position attention uses einsum."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models import MaxVit

FIXPORT_EXAMPLE = {
    "title": "Tiny MaxViT at opset 11 (einsum)",
    "description": (
        "MaxViT's partition attention computes q @ k and attn @ v with torch.einsum; "
        "aten::einsum has a symbolic only from opset 12 (ONNX Einsum), so at opset 11 "
        "\"Exporting the operator 'aten::einsum' to ONNX opset version 11 is not supported\"."
    ),
    "opset": 11,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::einsum", "reason": "no_symbolic", "count": 8},
    ],
    "fix_tolerance": 1e-4,
    "notes": (
        "2 einsums x 2 attentions (block + grid) x 2 stages. ONNX has no Einsum before opset "
        "12, so a fix at opset 11 must rewrite 'bhid,bhjd->bhij' and 'bhij,bhjd->bhid' with "
        "Transpose/MatMul. Opset 9-10 additionally fail on prim::ConstantChunk; 12+ exports."
    ),
}


def _reset_linear_layers(model: nn.Module) -> None:
    """Give every Linear PyTorch's default random init so outputs are O(1)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.reset_parameters()


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return a two-stage MaxViT for 32x32 images and one input image."""
    torch.manual_seed(0)
    model = MaxVit(
        input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32],
        block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10,
    )
    _reset_linear_layers(model)
    return model.eval(), (torch.randn(1, 3, 32, 32),)
