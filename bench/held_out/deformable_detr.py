"""Deformable DETR, tiny: multi-scale deformable attention sampled with grid_sample."""
from __future__ import annotations

import torch
from torch import nn
from transformers import DeformableDetrConfig, DeformableDetrModel


class Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        config = DeformableDetrConfig(
            use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
            backbone_config={"model_type": "resnet", "num_channels": 3, "embedding_size": 8,
                             "hidden_sizes": [8, 16, 32, 64], "depths": [1, 1, 1, 1],
                             "out_features": ["stage2", "stage3", "stage4"]},
            d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10, num_feature_levels=3, encoder_n_points=2,
            decoder_n_points=2)
        self.detr = DeformableDetrModel(config)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.detr(pixel_values).last_hidden_state


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Detector().eval(), (torch.randn(1, 3, 64, 64),)
