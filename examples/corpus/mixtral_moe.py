"""A tiny Mixtral mixture-of-experts LM from transformers, exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import MixtralConfig, MixtralForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Mixtral MoE LM (diff, histc, _grouped_mm)",
    "description": ('Besides aten::diff, the experts count their tokens with torch.histc and run as one ragged '
                    'torch._grouped_mm per projection: neither has a symbolic.'),
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
    "notes": ("transformers 5's default experts implementation on CPU is grouped_mm."),
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer, 4-expert Mixtral with random weights from a tiny config, and 8 token ids."""
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_local_experts=4,
                   num_experts_per_tok=2)
    return LogitsOnly(MixtralForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
