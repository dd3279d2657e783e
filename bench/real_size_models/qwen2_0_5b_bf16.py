"""Qwen2-0.5B as published: bfloat16 weights (494 M parameters, random), 16 token ids, logits out."""

from __future__ import annotations

import torch
from torch import nn

from fixport.bench.real_size_models import qwen2_0_5b

FIXPORT_EXAMPLE = {
    "title": "Qwen2-0.5B causal LM in bfloat16 at real size (aten::diff)",
    "description": ("The LM in the dtype its checkpoints ship in. ONNX Runtime's CPU provider has no bfloat16 "
                    "kernels, so Fixport runs it widened to float32 on CPU and held to bfloat16's tolerance."),
    "opset": 17,
    "export_options": {},
    "library": "transformers",
}


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The float32 LM of qwen2_0_5b.py (the tiny config under --quick), its weights cast to bfloat16."""
    model, inputs = qwen2_0_5b.build()
    return model.to(torch.bfloat16).eval(), inputs
