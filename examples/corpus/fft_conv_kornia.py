"""A Gaussian blur with kornia.filters.fft_conv: convolution as a product of real FFTs."""

from __future__ import annotations

import kornia
import torch
from torch import nn

FIXPORT_EXAMPLE = {
    "title": "kornia FFT convolution (fft_rfftn, fft_irfftn)",
    "description": (
        "kornia.filters.fft_conv transforms image and kernel with torch.fft.rfftn, multiplies the "
        "spectra (one conjugated) and goes back with irfftn: no FFT op has a symbolic, and the spectra "
        "are complex."
    ),
    "opset": 17,
    "export_options": {},
    "expected_unsupported": [
        {"kind": "aten::_conj", "reason": "symbolic_rejected", "count": 1},
        {"kind": "aten::fft_irfftn", "reason": "no_symbolic", "count": 1},
        {"kind": "aten::fft_rfftn", "reason": "no_symbolic", "count": 2},
        {"kind": "aten::mul", "reason": "symbolic_rejected", "count": 1},
    ],
    "fix_tolerance": 1e-3,
    "notes": "The complex product and conjugate between the transforms must be done in real arithmetic.",
    "library": "kornia",
}


class FftBlur(nn.Module):
    """A 5x5 Gaussian blur through the frequency domain."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("kernel", kornia.filters.get_gaussian_kernel2d((5, 5), (1.5, 1.5)))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return kornia.filters.fft_conv(image, self.kernel)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The blur and one 3-channel 20x20 image."""
    torch.manual_seed(0)
    return FftBlur().eval(), (torch.rand(1, 3, 20, 20),)
