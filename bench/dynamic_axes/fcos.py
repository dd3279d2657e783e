"""torchvision's FCOS (ResNet-50 FPN, random weights) on a small image: its height and width are dynamic."""
from __future__ import annotations

import torch
from torch import nn
from torchvision.models.detection import fcos_resnet50_fpn

INPUT_NAMES = ["image"]
DYNAMIC_AXES = {"image": {1: "height", 2: "width"}}


class Detector(nn.Module):
    """The first image's boxes, scores and labels."""

    def __init__(self) -> None:
        super().__init__()
        self.model = fcos_resnet50_fpn(weights=None, weights_backbone=None, min_size=64, max_size=96,
                                       score_thresh=0.0, detections_per_img=8)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        found = self.model([image])[0]
        return found["boxes"], found["scores"], found["labels"]


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Detector().eval(), (torch.rand(3, 64, 64),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.rand(3, 64, 96),)
