"""transformers' Depth Anything, tiny (DINOv2 backbone): the image's height and width are dynamic."""
from __future__ import annotations

import torch
from torch import nn
from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config

INPUT_NAMES = ["pixel_values"]
DYNAMIC_AXES = {"pixel_values": {2: "height", 3: "width"}}


class Depth(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        backbone = Dinov2Config(image_size=28, patch_size=14, hidden_size=32, num_hidden_layers=4,
                                num_attention_heads=2, intermediate_size=64,
                                out_features=["stage1", "stage2", "stage3", "stage4"],
                                reshape_hidden_states=False)
        config = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=32,
                                     neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16,
                                     head_hidden_size=8, patch_size=14)
        self.model = DepthAnythingForDepthEstimation(config)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values).predicted_depth


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Depth().eval(), (torch.randn(1, 3, 28, 28),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 3, 42, 56),)
