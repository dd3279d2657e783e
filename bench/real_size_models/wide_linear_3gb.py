"""Three 16384x16384 float32 Linear layers: 805 M parameters, an ONNX file of 3.2 GB (over protobuf's 2 GB)."""

from __future__ import annotations

import torch
from torch import nn

from fixport.bench.real_size_models._size import quick

FIXPORT_EXAMPLE = {
    "title": "Three 16k x 16k Linear layers (3.2 GB of weights)",
    "description": "Few, large weights: the ONNX file needs external data (protobuf stops at 2 GB).",
    "opset": 17,
    "export_options": {},
}

REAL_WIDTH, TINY_WIDTH, LAYERS = 16384, 64, 3


class WideMLP(nn.Module):
    """Linear, GELU, Linear, GELU, Linear, all width x width without bias."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(LAYERS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, layer in enumerate(self.layers):
            x = layer(x) if index == 0 else layer(nn.functional.gelu(x))
        return x


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The MLP at width 16384 (64 under --quick), weights N(0, 1/width), and 4 input rows."""
    torch.manual_seed(0)
    width = TINY_WIDTH if quick() else REAL_WIDTH
    with torch.device("meta"):
        model = WideMLP(width)
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.normal_(0.0, width ** -0.5)
    return model.eval(), (torch.randn(4, width),)
