"""ultralytics' YOLO11n (bench/held_out/ultralytics_yolo11n.py): the image's height and width are dynamic."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

INPUT_NAMES = ["images"]
DYNAMIC_AXES = {"images": {2: "height", 3: "width"}}
_HELD_OUT = Path(__file__).resolve().parent.parent / "held_out" / "ultralytics_yolo11n.py"


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    spec = importlib.util.spec_from_file_location("held_out_yolo11n", _HELD_OUT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module.build()


def other_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.rand(1, 3, 96, 64),)
