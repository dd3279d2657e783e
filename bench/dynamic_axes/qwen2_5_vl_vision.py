"""Qwen2.5-VL's vision tower (bench/held_out/qwen2_5_vl_vision.py): the number of patches is dynamic."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

INPUT_NAMES = ["patches", "grid_thw"]
DYNAMIC_AXES = {"patches": {0: "patches"}}
_HELD_OUT = Path(__file__).resolve().parent.parent / "held_out" / "qwen2_5_vl_vision.py"


def _held_out():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("held_out_qwen2_5_vl_vision", _HELD_OUT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return _held_out().build()


def other_inputs() -> tuple[torch.Tensor, ...]:
    """64 patches, 8 rows of 8."""
    torch.manual_seed(1)
    return torch.randn(64, _held_out().PATCH_VALUES), torch.tensor([[1, 8, 8]])
