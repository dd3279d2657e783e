"""torch-geometric's GAT: attention over edges, a softmax per target node."""
from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GATConv


class GAT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = GATConv(8, 4, heads=2)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.conv(x, edge_index)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return GAT().eval(), (torch.randn(10, 8), torch.randint(0, 10, (2, 30), generator=torch.Generator().manual_seed(0)))


def other_inputs() -> tuple[torch.Tensor, ...]:
    return torch.randn(10, 8), torch.randint(0, 10, (2, 30), generator=torch.Generator().manual_seed(1))
