"""torch-geometric's GCN: message passing with scatter-adds over an edge list."""
from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GCNConv


class GCN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = GCNConv(8, 16), GCNConv(16, 4)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x, edge_index).relu(), edge_index)


def _edges(seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 10, (2, 30), generator=generator)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return GCN().eval(), (torch.randn(10, 8), _edges(0))


def other_inputs() -> tuple[torch.Tensor, ...]:
    return torch.randn(10, 8), _edges(1)  # another graph of the same size
