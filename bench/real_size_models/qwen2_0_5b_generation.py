"""Qwen2-0.5B at its published config as a checkpoint folder, through the text-generation task:
prefill and decode as transformers' exporter decomposes it, and the generation check.

Random weights written with ``save_pretrained`` (no download); the tiny config under --quick.
"""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from fixport.bench.real_size_models._size import quick
from fixport.bench.real_size_models.qwen2_0_5b import REAL, TINY

TASK = "text-generation"
GENERATION_IDS = dict(bos_token_id=151643, eos_token_id=151643, pad_token_id=151643)  # Qwen2's own
TINY_IDS = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)


def write_checkpoint(folder: Path) -> Path:
    """The checkpoint folder, as save_pretrained writes it (safetensors, config.json, generation_config.json)."""
    torch.manual_seed(0)
    config = Qwen2Config(**(dict(TINY, **TINY_IDS) if quick() else dict(REAL, **GENERATION_IDS)))
    config.architectures = ["Qwen2ForCausalLM"]
    Qwen2ForCausalLM(config).eval().save_pretrained(folder)
    return folder
