"""Qwen3-Next, tiny: gated delta-net linear attention beside full attention, and a mixture of experts."""
from __future__ import annotations

import torch
from torch import nn
from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    config = Qwen3NextConfig(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                             layer_types=["linear_attention", "full_attention"], num_attention_heads=4,
                             num_key_value_heads=2, head_dim=16, linear_num_value_heads=2, linear_num_key_heads=2,
                             linear_key_head_dim=16, linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=32, shared_expert_intermediate_size=32, max_position_embeddings=64)
    return LogitsOnly(Qwen3NextForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)


def other_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1)),)
