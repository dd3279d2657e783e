"""A two-stage torchvision Swin Transformer: shifted windows need opset 11 Pad and index_put."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models import SwinTransformer

FIXPORT_EXAMPLE = {
    "title": "Tiny Swin Transformer at opset 10 (pad, index_put)",
    "description": (
        "Window padding sizes are computed from the feature shape, and the shifted-window mask "
        "is filled by slice assignment; at opset 10 the symbolics refuse both: \"The sizes of "
        "the padding must be constant\" and \"ONNX export of index_put in opset 9\"."
    ),
    "opset": 10,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::pad", "reason": "symbolic_rejected", "count": 5},
        {"kind": "aten::index_put", "reason": "symbolic_rejected", "count": 9},
        # the attention mask's float comparisons: ONNX's Equal takes floats from opset 11 on
        {"kind": "aten::ne", "reason": "runtime_error", "count": 1},
        {"kind": "aten::eq", "reason": "runtime_error", "count": 1},
    ],
    "fix_tolerance": 1e-4,
    "notes": (
        "pad: one per block (4) plus PatchMerging (1); index_put: the 9 mask regions of the one "
        "shifted block (stage 2 has a 4x4 map, so its shift is dropped). Opset 9 adds "
        "aten::slice (step != 1 in PatchMerging); 11+ exports. Pads are all zero for 32x32 "
        "inputs, but a 'fix' that drops index_put (no attention mask) is off by ~1e-2 and must "
        "fail the comparison."
    ),
}


def _reset_linear_layers(model: nn.Module) -> None:
    """Give every Linear PyTorch's default random init so outputs are O(1)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.reset_parameters()


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return a depths=[2, 2] Swin with 4x4 windows for 32x32 images and one input image."""
    torch.manual_seed(0)
    model = SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[4, 4],
        stochastic_depth_prob=0.0, num_classes=10,
    )
    _reset_linear_layers(model)
    return model.eval(), (torch.randn(1, 3, 32, 32),)
