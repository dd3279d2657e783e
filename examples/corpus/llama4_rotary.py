"""A tiny Llama 4 text model from transformers: complex rotary embeddings, exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import Llama4ForCausalLM, Llama4TextConfig

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Llama 4 LM (complex rotary: polar, view_as_complex, view_as_real)",
    "description": (
        "Llama 4 builds its rotary frequencies with torch.polar and rotates queries and keys as complex "
        "numbers (view_as_complex, a complex Mul, view_as_real). ONNX has no complex tensors: "
        "none of these converts, and ops that only move complex tensors (unsqueeze, to) refuse them."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::diff", "reason": "no_symbolic", "count": 1},
        # the cumsum over its bool result: ONNX Runtime has no bool CumSum, named from its kernel table
        {"kind": "aten::cumsum", "reason": "runtime_error", "count": 1},
        {"kind": "aten::mul", "reason": "symbolic_rejected", "count": 5},
        {"kind": "aten::polar", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::slice", "reason": "symbolic_rejected", "count": 6},
        {"kind": "aten::to", "reason": "symbolic_rejected", "count": 2},
        {"kind": "aten::unsqueeze", "reason": "symbolic_rejected", "count": 2},
        {"kind": "aten::view_as_complex", "reason": "no_symbolic", "count": 4},
        {"kind": "aten::view_as_real", "reason": "no_symbolic", "count": 4},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The fixes carry complex tensors as (..., 2) real tensors and multiply them in real arithmetic.",
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer Llama 4 text model with 4 experts, random weights, and 8 token ids."""
    torch.manual_seed(0)
    config = Llama4TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, intermediate_size_mlp=64,
                              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                              max_position_embeddings=64, num_local_experts=4, num_experts_per_tok=1)
    return LogitsOnly(Llama4ForCausalLM(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
