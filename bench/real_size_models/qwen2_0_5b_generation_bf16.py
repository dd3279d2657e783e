"""Qwen2-0.5B at its published config as a checkpoint folder saved in bfloat16, as its checkpoints
ship on the hub: the text-generation task (prefill, decode, the generation check) exported in the
checkpoint's own dtype (--dtype auto).

Random weights written with ``save_pretrained`` (no download); the tiny config under --quick.
"""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from fixport.bench.real_size_models._size import quick
from fixport.bench.real_size_models.qwen2_0_5b import REAL, TINY
from fixport.bench.real_size_models.qwen2_0_5b_generation import GENERATION_IDS, TINY_IDS

__all__ = ["TASK", "write_bfloat16_checkpoint", "write_checkpoint"]

TASK = "text-generation"


def write_checkpoint(folder: Path) -> Path:
    """The bfloat16 checkpoint folder (config.json's dtype bfloat16), as save_pretrained writes it."""
    return write_bfloat16_checkpoint(folder, REAL)


def write_bfloat16_checkpoint(folder: Path, real: dict) -> Path:
    """A Qwen2 checkpoint folder of config ``real`` (TINY under --quick), saved in bfloat16."""
    torch.manual_seed(0)
    config = Qwen2Config(**(dict(TINY, **TINY_IDS) if quick() else dict(real, **GENERATION_IDS)))
    config.architectures = ["Qwen2ForCausalLM"]
    Qwen2ForCausalLM(config).eval().to(torch.bfloat16).save_pretrained(folder)
    return folder
