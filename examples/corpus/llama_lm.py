"""A tiny Llama causal LM from transformers, exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Llama causal LM (aten::diff)",
    "description": ('transformers 5 checks input_ids-only calls for packed sequences with torch.diff over the '
                    'position ids: aten::diff has no symbolic at any opset.'),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::diff", "reason": "no_symbolic", "count": 1},
        # the cumsum over its bool result: ONNX Runtime has no bool CumSum, named from its kernel table
        {"kind": "aten::cumsum", "reason": "runtime_error", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": ('Every decoder LM of transformers 5 hits the same aten::diff; '
              'the cumsum over its bool result needs a cast in ONNX.'),
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer Llama with random weights from a tiny config, and 8 token ids."""
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return LogitsOnly(LlamaForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
