"""A super-resolution net that reads its upscale factor with ``float(scale)``: the image's height and
width are dynamic, and the factor is an input."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

INPUT_NAMES = ["image", "scale"]
DYNAMIC_AXES = {"image": {2: "height", 3: "width"}}


class SuperResolution(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Conv2d(3, 16, 3, padding=1)
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.tail = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, image: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        features = self.body(self.head(image))
        up = F.interpolate(features, scale_factor=float(scale), mode="bicubic", align_corners=False)
        return self.tail(up) + F.interpolate(image, scale_factor=float(scale), mode="bicubic", align_corners=False)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return SuperResolution().eval(), (torch.rand(1, 3, 16, 16), torch.tensor(2.0))


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return torch.rand(1, 3, 24, 20), torch.tensor(3.0)
