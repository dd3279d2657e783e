"""A tiny Gemma 3 causal LM from transformers (sliding-window layers), exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Gemma 3 causal LM (aten::diff)",
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
    "notes": ('Gemma 3 mixes sliding-window and global attention layers; same aten::diff as every decoder LM.'),
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer Gemma 3 with random weights from a tiny config, and 8 token ids."""
    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, head_dim=8)
    return LogitsOnly(Gemma3ForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
