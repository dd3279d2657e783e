"""A post-training-quantized Conv2d+ReLU (torch.ao.quantization, eager mode) at opset 9."""

from __future__ import annotations

import torch
import torch.ao.quantization as tq
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "Quantized Conv+ReLU at opset 9 (quantized::conv2d_relu)",
    "description": (
        "Eager-mode post-training quantization fuses Conv2d and ReLU into quantized::conv2d_relu "
        "with packed weights. The exporter's quantized symbolics start at opset 10; below, the "
        "packed parameters used to reach the serializer and trip an internal assert. The diagnosis "
        "lists the quantize, the fused convolution and the dequantize instead."
    ),
    "opset": 9,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::quantize_per_tensor", "reason": "no_symbolic", "count": 1},
        {"kind": "quantized::conv2d_relu", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::dequantize", "reason": "no_symbolic", "count": 1},
    ],
    "fix_tolerance": 0.1,
    "notes": "Opset 10+ exports QuantizeLinear/QLinearConv-style graphs; one quantization step is ~0.03.",
}


class ConvReLU(nn.Module):
    """quantize -> Conv2d -> ReLU -> dequantize (fused and converted by build())."""

    def __init__(self) -> None:
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3)
        self.relu = nn.ReLU()
        self.dequant = tq.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.relu(self.conv(self.quant(x))))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Calibrate on the example input and convert; returns the quantized model and that input."""
    torch.manual_seed(0)
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "qnnpack" if "qnnpack" in engines else "fbgemm"
    model = ConvReLU().eval()
    model.qconfig = tq.get_default_qconfig(torch.backends.quantized.engine)
    tq.fuse_modules(model, [["conv", "relu"]], inplace=True)
    tq.prepare(model, inplace=True)
    example = torch.randn(1, 3, 16, 16)
    model(example)
    tq.convert(model, inplace=True)
    return model, (example,)
