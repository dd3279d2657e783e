"""Float16 and bfloat16 outputs judged against a float32 run of the same model.

A half-precision model accumulates rounding in every layer, and torch and ONNX Runtime round in
different places (kernel blocking, fused ops): after a dozen transformer blocks their float16
outputs can differ by more than float16's tolerance while neither is wrong. So an output that
misses the tolerance is held to the model run in float32 (the same weights, widened exactly; the
inputs widened too): when ONNX Runtime's float16 output is no further from it than
:data:`ROUNDING_MARGIN` times torch's own float16 output (or than the tolerance), the difference
is float16's rounding, not the export's, and the output passes with a note saying so. The float32
run and the rule are the fix script's support's (``core/script_support/low_precision.py``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fixport.core.model.output_stats import OutputStats, to_numpy
from fixport.core.script_support.low_precision import (
    LOW_PRECISION,
    LOW_PRECISION_NAMES,
    ROUNDING_MARGIN,
    float32_outputs,
    within_rounding,
)

__all__ = ["LOW_PRECISION", "LOW_PRECISION_NAMES", "ROUNDING_MARGIN", "float32_outputs", "rounding_only",
           "within_rounding"]


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
