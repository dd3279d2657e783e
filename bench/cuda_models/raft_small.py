"""torchvision's RAFT (small) with random weights: optical flow by correlation lookups (GridSample)."""
from __future__ import annotations

import torch
from torch import nn
from torchvision.models.optical_flow import raft_small

FIXPORT_EXAMPLE = {
    "title": "RAFT small (torchvision)",
    "description": "Optical flow: a correlation pyramid sampled with grid_sample, refined by a GRU, 4 updates.",
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [],
    "fix_tolerance": 1e-3,
}


class LastFlow(nn.Module):
    """RAFT returns one flow per update: the last one is the answer."""

    def __init__(self, updates: int = 4) -> None:
        super().__init__()
        self.raft = raft_small(weights=None)
        self.updates = updates

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return self.raft(first, second, num_flow_updates=self.updates)[-1]


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Two 128x128 frames (RAFT needs sides divisible by 8)."""
    torch.manual_seed(0)
    return LastFlow().eval(), (torch.rand(1, 3, 128, 128) * 2 - 1, torch.rand(1, 3, 128, 128) * 2 - 1)
