"""ultralytics' YOLO11n detector built from its packaged yaml (no weights downloaded)."""
from __future__ import annotations

import torch
from torch import nn
from ultralytics.nn.tasks import DetectionModel


class Detections(nn.Module):
    """The decoded boxes and class scores (the model also returns its raw feature maps)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = DetectionModel("yolo11n.yaml", nc=80, verbose=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.model(images)
        return out[0] if isinstance(out, (tuple, list)) else out


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Detections().eval(), (torch.rand(1, 3, 64, 64),)
