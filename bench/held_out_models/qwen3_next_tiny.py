"""Qwen3-Next at a tiny config (gated delta-net and full attention layers, MoE), 8 token ids, logits out.

Five problem kinds (diff, linalg_solve_triangular, histc, _grouped_mm, bool cumsum) behind the
model's writes into slices (``core_attn_out[:, :, i] = ...``, ``inv_perm[perm] = ...``)."""

from __future__ import annotations

import torch
from torch import nn
from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    config = Qwen3NextConfig(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                             linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16,
                             linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=32, shared_expert_intermediate_size=32,
                             max_position_embeddings=64, layer_types=["linear_attention", "full_attention"])
    return LogitsOnly(Qwen3NextForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
