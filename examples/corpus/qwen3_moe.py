"""A tiny Qwen3-MoE LM from transformers, exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Qwen3-MoE LM (diff, histc, _grouped_mm)",
    "description": ('Qwen3-MoE routes each token to its top-2 experts; the expert dispatch uses torch.histc and '
                    'torch._grouped_mm, and the input_ids-only call aten::diff.'),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::_grouped_mm", "reason": "no_symbolic", "count": 4},
        {"kind": "aten::diff", "reason": "no_symbolic", "count": 1},
        # the cumsum over its bool result: ONNX Runtime has no bool CumSum, named from its kernel table
        {"kind": "aten::cumsum", "reason": "runtime_error", "count": 1},
        {"kind": "aten::histc", "reason": "no_symbolic", "count": 2},
    ],
    "fix_tolerance": 1e-3,
    "notes": ('Same routing code as Mixtral, with per-head q/k RMSNorm.'),
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer, 4-expert Qwen3-MoE with random weights from a tiny config, and 8 token ids."""
    torch.manual_seed(0)
    config = Qwen3MoeConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32, head_dim=8)
    return LogitsOnly(Qwen3MoeForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
