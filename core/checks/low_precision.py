"""Float16 and bfloat16 outputs judged against a float32 run of the same model.

A half-precision model accumulates rounding in every layer, and torch and ONNX Runtime round in
different places (kernel blocking, fused ops): after a dozen transformer blocks their float16
outputs can differ by more than float16's tolerance while neither is wrong. So an output that
misses the tolerance is held to the model run in float32 (the same weights, widened exactly; the
inputs widened too): when ONNX Runtime's float16 output is no further from it than
:data:`ROUNDING_MARGIN` times torch's own float16 output (or than the tolerance), the difference
is float16's rounding, not the export's, and the output passes with a note saying so.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fixport.core.model.output_stats import OutputStats, flatten_outputs, to_numpy

LOW_PRECISION = (torch.float16, torch.bfloat16)
LOW_PRECISION_NAMES = ("float16", "bfloat16")
ROUNDING_MARGIN = 2.0  # ONNX Runtime may be this many times further from float32 than torch is


def rounding_only(module: torch.nn.Module, inputs: Sequence[Any], torch_outputs: list[tuple[str, np.ndarray]],
                  onnx_outputs: Sequence[Any], failing: list[OutputStats]) -> dict[str, str]:
    """Of the ``failing`` low-precision outputs, those within float16/bfloat16 rounding of a float32
    run (by output name), each with a note giving both distances."""
    candidates = [s for s in failing if s.dtype in LOW_PRECISION_NAMES and not s.problem]
    if not candidates:
        return {}
    reference = float32_outputs(module, inputs)
    if reference is None:
        return {}
    position = {name: index for index, (name, _) in enumerate(torch_outputs)}
    accepted: dict[str, str] = {}
    for stats in candidates:
        index = position.get(stats.name)
        if index is None or index >= len(reference) or index >= len(onnx_outputs):
            continue
        rounding, onnx_error, torch_error = within_rounding(torch_outputs[index][1], to_numpy(onnx_outputs[index]),
                                                            reference[index][1], stats.atol)
        if rounding:
            accepted[stats.name] = (
                f"Output {stats.name} ({stats.dtype}) is {stats.max_abs:.3g} from torch's, beyond {stats.dtype}'s "
                f"tolerance, but that is {stats.dtype} rounding: against the model run in float32, ONNX Runtime is "
                f"{onnx_error:.3g} off and torch's own {stats.dtype} run {torch_error:.3g}.")
    return accepted


def within_rounding(torch_value: np.ndarray, onnx_value: np.ndarray, float32_value: np.ndarray,
                    atol: float) -> tuple[bool, float, float]:
    """Whether ONNX Runtime's half-precision output is no further from the float32 run than
    ROUNDING_MARGIN times torch's own (or than ``atol``); with both distances (ONNX Runtime's, torch's)."""
    exact = np.asarray(float32_value).astype(np.float64)
    torch_error = _max_abs(np.asarray(torch_value), exact)
    onnx_error = _max_abs(np.asarray(onnx_value), exact)
    return onnx_error <= max(ROUNDING_MARGIN * torch_error, atol), onnx_error, torch_error


def float32_outputs(module: torch.nn.Module, inputs: Sequence[Any]) -> list[tuple[str, np.ndarray]] | None:
    """The model's outputs with its float16/bfloat16 weights and inputs widened to float32 (in
    place, then narrowed back: exact both ways); None when the model does not run that way."""
    narrow = [(tensor, tensor.dtype) for tensor in itertools.chain(module.parameters(), module.buffers())
              if tensor.dtype in LOW_PRECISION]
    widened = [t.float() if isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION else t for t in inputs]
    try:
        for tensor, _ in narrow:
            tensor.data = tensor.data.float()
        with torch.no_grad():
            return flatten_outputs(module(*widened))
    except Exception:  # a model that casts to its own dtype and then refuses float32: no verdict
        return None
    finally:
        for tensor, dtype in narrow:
            tensor.data = tensor.data.to(dtype)


def _max_abs(values: np.ndarray, exact: np.ndarray) -> float:
    if values.shape != exact.shape:
        return float("inf")
    difference = np.abs(values.astype(np.float64) - exact)
    return float(np.nanmax(difference)) if difference.size else 0.0
