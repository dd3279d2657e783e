"""Five common ways a trace bakes a size into a constant, under declared dynamic axes."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Sizes baked by the trace (dynamic axes)",
    "description": (
        "Exported with dynamic batch and length, but each output computes a size in Python: int(), "
        ".item(), .tolist(), a range over a size, numpy on the shape. The trace records the traced "
        "values as constants, so the ONNX model is right at 2x8 and wrong at every other length."
    ),
    "opset": 17,
    "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch", 1: "length"}}},
    "expected_unsupported": [
        {"kind": "aten::slice", "reason": "shape_specialised", "count": 2},
        {"kind": "aten::mul", "reason": "shape_specialised", "count": 1},
        {"kind": "aten::add", "reason": "shape_specialised", "count": 1},
        {"kind": "aten::select", "reason": "shape_specialised", "count": 1},
        {"kind": "aten::div", "reason": "shape_specialised", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": "check names the line of each size the trace baked; the fix is in the model's code.",
}


class BakedSizes(nn.Module):
    """Each output bakes the traced length in one way."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        half = int(x.shape[1]) // 2
        by_int = x[:, :half]
        by_item = x[:, : (torch.tensor(x.shape[1]) // 4).item()]
        rows, columns = torch.tensor(x.shape).tolist()
        by_tolist = x * (rows * columns)
        by_range = sum(x[:, i] for i in range(x.shape[1]))
        by_numpy = x / float(np.prod(x.shape))
        return by_int, by_item, by_tolist, by_range, by_numpy


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model and one 2x8 input."""
    torch.manual_seed(0)
    return BakedSizes().eval(), (torch.randn(2, 8),)
