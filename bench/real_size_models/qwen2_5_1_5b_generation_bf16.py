"""Qwen2.5-1.5B (1.54 B parameters) at its published config as a checkpoint folder saved in bfloat16, as it
ships on the hub, through text-generation (--dtype auto). Random weights, no download."""
from __future__ import annotations

from pathlib import Path

from fixport.bench.real_size_models.qwen2_0_5b_generation_bf16 import write_bfloat16_checkpoint

__all__ = ["TASK", "write_checkpoint"]

TASK = "text-generation"

REAL = dict(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
            num_attention_heads=12, num_key_value_heads=2,
            max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)


def write_checkpoint(folder: Path) -> Path:
    return write_bfloat16_checkpoint(folder, REAL)
