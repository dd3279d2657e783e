"""Robust pooling with a median: torch_lib has no ONNX function for aten::median.dim."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Median pooling (dynamo: no ONNX function for an aten op)",
    "description": (
        "Token features pooled with the median over the sequence, which outliers cannot drag as they "
        "drag a mean. torch.export captures aten::median.dim; onnxscript's torch_lib has no function "
        "for it, so torch.onnx.export(dynamo=True) stops at step 3 (the TorchScript exporter has no symbolic either)."
    ),
    "opset": 18,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::median", "reason": "no_symbolic", "count": 1},
    ],
    "expected_unsupported_dynamo": [
        {"kind": "aten::median.dim", "reason": "no_onnx_function", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix: an ONNX function for aten::median.dim: TopK over the whole axis (smallest first), then "
        "the element at (n - 1) // 2, which is torch's lower median (template onnx_function.median_dim_topk)."
    ),
}


class MedianPool(nn.Module):
    """Project tokens, pool them with the median over the sequence, classify."""

    def __init__(self) -> None:
        super().__init__()
        self.project = nn.Linear(16, 32)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.project(tokens))
        pooled = features.median(dim=1).values
        return self.head(pooled)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one batch of 2 sequences of 9 tokens."""
    torch.manual_seed(0)
    return MedianPool().eval(), (torch.randn(2, 9, 16),)
