"""A forward() that branches on a tensor's value: TorchScript traces one branch, torch.export cannot capture it."""

from __future__ import annotations

import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Data-dependent branch (dynamo capture failure)",
    "description": (
        "forward() checks `if scores.max() > threshold:` and reads `int(count)`. The TorchScript "
        "tracer records the branch taken (with a TracerWarning) and exports an ONNX model that holds "
        "for the example input's values only; torch.export cannot decide either at capture time, so "
        "torch.onnx.export(dynamo=True) stops at step 1."
    ),
    "opset": 18,
    "export_options": {},
    # the trace fixes both at the example's values: x is an input whose values the export does not follow
    "expected_unsupported": [{"kind": "aten::mul", "reason": "baked_input", "count": 1}],
    "expected_unsupported_dynamo": [
        {"kind": "torch.export::data_dependent_error", "reason": "capture_failed", "count": 2},
    ],
    "fix_tolerance": 1e-5,
    "notes": (
        "Fix: make the branch branchless with torch.where, and bound the count with "
        "torch._check(count <= x.shape[1]) (or avoid .item()); draft_export lists both lines."
    ),
}


class Gate(nn.Module):
    """linear -> scale only when the largest score passes a threshold -> keep the first `count` columns."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.linear(x)
        if scores.max() > 0.5:
            scores = scores * 2.0
        count = int((scores > 0).sum())
        return scores[:, :count]


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Return the model in eval mode and one 2x8 input."""
    torch.manual_seed(0)
    return Gate().eval(), (torch.randn(2, 8),)
