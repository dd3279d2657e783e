"""Sensor windows with NaN gaps: torch's amax propagates NaN, ONNX Runtime's ReduceMax skips it."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "NaN-marked gaps through amax (dynamo: numbers differ from torch)",
    "description": (
        "Readings above a dropout level are marked NaN (a gap) and each window keeps its peak with amax: "
        "torch's amax returns NaN for a window with a gap, the flag downstream code checks. ONNX "
        "Runtime's ReduceMax skips the NaN and returns the peak of the rest, so the exported model runs "
        "but never flags a gap."
    ),
    "opset": 18,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::amax", "reason": "mismatch", "count": 1},
    ],
    "expected_unsupported_dynamo": [
        {"kind": "aten::amax.default", "reason": "mismatch", "count": 1},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix: an ONNX function for aten::amax.default that returns NaN where the reduced slice has one "
        "(Where(ReduceMax(IsNaN), NaN, ReduceMax)); template onnx_function.amax_nan_propagating."
    ),
}


class PeakPerWindow(nn.Module):
    """Mark dropouts as NaN and keep each window's peak (NaN where the window has a gap)."""

    def __init__(self, dropout_level: float = 1.5) -> None:
        super().__init__()
        self.dropout_level = dropout_level

    def forward(self, readings: torch.Tensor) -> torch.Tensor:
        marked = torch.where(readings > self.dropout_level, torch.nan, readings)
        return torch.amax(marked, dim=-1)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model and 3 channels of 8 windows of 16 readings."""
    torch.manual_seed(0)
    return PeakPerWindow().eval(), (torch.randn(3, 8, 16),)
