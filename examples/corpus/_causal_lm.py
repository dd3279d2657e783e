"""What the corpus's causal LMs share: the model called as a deployment calls it."""
from __future__ import annotations

import torch
from torch import nn


class LogitsOnly(nn.Module):
    """A transformers causal LM called with input_ids only (no cache): logits out."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits
