"""A tiny GPT-2 from transformers, exported with input_ids only."""

from __future__ import annotations

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel

from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "GPT-2 LM (aten::diff)",
    "description": (
        "GPT-2 with learned positions still goes through transformers 5's packed-sequence check "
        "(torch.diff over the position ids) when called with input_ids only."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::diff", "reason": "no_symbolic", "count": 1},
        # the cumsum over its bool result: ONNX Runtime has no bool CumSum, named from its kernel table
        {"kind": "aten::cumsum", "reason": "runtime_error", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The oldest decoder architecture in transformers fails the same way as the newest.",
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer GPT-2 with random weights and 8 token ids."""
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=2, n_positions=16)
    return LogitsOnly(GPT2LMHeadModel(config).eval()).eval(), (torch.randint(0, 64, (1, 8)),)
