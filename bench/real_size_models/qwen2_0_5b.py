"""Qwen2-0.5B at its published config (494 M parameters), random weights, 16 token ids, logits out."""

from __future__ import annotations

import torch
from torch import nn
from transformers import Qwen2Config, Qwen2ForCausalLM

from fixport.bench.real_size_models._size import quick
from fixport.examples.corpus._causal_lm import LogitsOnly

FIXPORT_EXAMPLE = {
    "title": "Qwen2-0.5B causal LM at real size (aten::diff)",
    "description": ("transformers 5 checks input_ids-only calls for packed sequences with torch.diff over the "
                    "position ids: aten::diff has no symbolic at any opset."),
    "opset": 17,
    "export_options": {},
    "library": "transformers",
}

REAL = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
            num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
            rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)
TINY = dict(REAL, vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
TOKENS = 16


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Qwen2ForCausalLM from its config (the tiny one under --quick) and 1x16 token ids."""
    torch.manual_seed(0)
    config = Qwen2Config(**(TINY if quick() else REAL))
    model = LogitsOnly(Qwen2ForCausalLM(config).eval()).eval()
    return model, (torch.randint(0, config.vocab_size, (1, TOKENS)),)
