"""A tiny BERT classifier from transformers, dynamically quantized (int8 Linear layers)."""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertConfig, BertForSequenceClassification

FIXPORT_EXAMPLE = {
    "title": "Dynamic-quantized BERT (quantized::linear_dynamic)",
    "description": (
        "torch.ao.quantization.quantize_dynamic swaps every Linear for an int8 one that quantizes its "
        "input on the fly: quantized::linear_dynamic has no symbolic, so every Linear fails."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "quantized::linear_dynamic", "reason": "no_symbolic", "count": 14},
    ],
    "fix_tolerance": 1e-3,
    "notes": (
        "The fix runs the dequantized int8 weights as a float MatMul; torch quantizes the activations, "
        "so the two differ by about one activation quantization step."
    ),
    "library": "transformers",
}


class Logits(nn.Module):
    """The classifier called with input_ids only: logits out."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).logits


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A 2-layer BERT, dynamically quantized, and 8 token ids."""
    torch.manual_seed(0)
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "qnnpack" if "qnnpack" in engines else "fbgemm"
    config = BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=2, max_position_embeddings=16, num_labels=3)
    model = torch.ao.quantization.quantize_dynamic(BertForSequenceClassification(config).eval(),
                                                   {nn.Linear}, dtype=torch.qint8)
    return Logits(model).eval(), (torch.randint(0, 64, (1, 8)),)
