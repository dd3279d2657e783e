"""A tiny BERT from transformers with scaled_dot_product_attention and a padding mask."""
from __future__ import annotations

import torch
from torch import nn
from transformers import BertConfig, BertModel

FIXPORT_EXAMPLE = {
    "title": "BERT with SDPA (transformers)",
    "description": "A 2-layer BERT whose attention is torch's scaled_dot_product_attention, with a padding mask.",
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [],
    "fix_tolerance": 1e-4,
    "library": "transformers",
}


class LastHiddenState(nn.Module):
    """BertModel's last hidden state, from token ids and the attention mask."""

    def __init__(self) -> None:
        super().__init__()
        config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64,
                            attn_implementation="sdpa")
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Two sequences of 16 tokens, the second padded after 10."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0
    return LastHiddenState().eval(), (ids, mask)
