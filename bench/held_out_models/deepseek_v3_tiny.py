"""DeepSeek-V3 at a tiny config (multi-head latent attention, grouped MoE routing), 8 token ids, logits out.

Four problem kinds (diff, histc, _grouped_mm, bool cumsum) behind the MoE's writes into slices."""

from __future__ import annotations

import torch
from torch import nn
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    config = DeepseekV3Config(vocab_size=64, hidden_size=64, intermediate_size=64, moe_intermediate_size=32,
                              num_hidden_layers=2, first_k_dense_replace=1, num_attention_heads=4,
                              num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=2,
                              topk_group=1, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
                              qk_nope_head_dim=8, v_head_dim=16, max_position_embeddings=64)
    return LogitsOnly(DeepseekV3ForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
