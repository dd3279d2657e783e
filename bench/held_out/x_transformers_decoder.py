"""x-transformers' decoder-only LM, tiny: rotary embeddings, causal attention."""
from __future__ import annotations

import torch
from torch import nn
from x_transformers import Decoder, TransformerWrapper


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = TransformerWrapper(num_tokens=100, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=2,
                                                                                    rotary_pos_emb=True))
    return model.eval(), (torch.randint(0, 100, (1, 16)),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(1)),)
