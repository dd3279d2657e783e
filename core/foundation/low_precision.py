"""Float16 and bfloat16 outputs judged against a float32 run of the same model: a difference no
larger than torch's own rounding is the precision's, not the export's."""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from .comparison import flatten_outputs

LOW_PRECISION = (torch.float16, torch.bfloat16)
LOW_PRECISION_NAMES = ("float16", "bfloat16")
ROUNDING_MARGIN = 2.0  # ONNX Runtime may be this many times further from float32 than torch is


@contextlib.contextmanager
def widened_to_float32(module: torch.nn.Module) -> Iterator[int]:
    """``module`` with its float16/bfloat16 weights and buffers as float32 copies (exact) while inside;
    the original tensors put back after, untouched (a memory-mapped checkpoint stays mapped). Yields
    how many tensors were widened."""
    narrow = [(tensor, tensor.data) for tensor in itertools.chain(module.parameters(), module.buffers())
              if tensor.dtype in LOW_PRECISION]
    try:
        for tensor, original in narrow:
            tensor.data = original.float()
        yield len(narrow)
    finally:
        for tensor, original in narrow:
            tensor.data = original


def widened_input(value: Any) -> Any:
    """A float16/bfloat16 tensor as float32 (exact); anything else as it is."""
    return value.float() if isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION else value


def float32_outputs(module: torch.nn.Module, inputs: Sequence[Any]) -> list[tuple[str, np.ndarray]] | None:
    """The model's outputs with its float16/bfloat16 weights and inputs widened to float32 (exact);
    None when the model does not run that way."""
    try:
        with widened_to_float32(module), torch.no_grad():
            return flatten_outputs(module(*[widened_input(t) for t in inputs]))
    except Exception:  # a model that casts to its own dtype and then refuses float32: no verdict
        return None


def _max_abs(values: np.ndarray, exact: np.ndarray) -> float:
    if values.shape != exact.shape:
        return float("inf")
    difference = np.abs(values.astype(np.float64) - exact)
    return float(np.nanmax(difference)) if difference.size else 0.0


def within_rounding(torch_value: np.ndarray, onnx_value: np.ndarray, float32_value: np.ndarray,
                    atol: float) -> tuple[bool, float, float]:
    """Whether ONNX Runtime's half-precision output is no further from the float32 run than
    ROUNDING_MARGIN times torch's own (or than ``atol``); with both distances (ONNX Runtime's, torch's)."""
    exact = np.asarray(float32_value).astype(np.float64)
    torch_error = _max_abs(np.asarray(torch_value), exact)
    onnx_error = _max_abs(np.asarray(onnx_value), exact)
    return onnx_error <= max(ROUNDING_MARGIN * torch_error, atol), onnx_error, torch_error
