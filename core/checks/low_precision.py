"""Float16 and bfloat16 outputs judged against a float32 run of the same model.

A half-precision model accumulates rounding in every layer, and torch and ONNX Runtime round in
different places (kernel blocking, fused ops): after a dozen transformer blocks their float16
outputs can differ by more than float16's tolerance while neither is wrong. So an output that
misses the tolerance is held to the model run in float32 (the same weights, widened exactly; the
inputs widened too): when ONNX Runtime's float16 output is no further from it than
:data:`ROUNDING_MARGIN` times torch's own float16 output (or than the tolerance), the difference
is float16's rounding, not the export's, and the output passes. The float32 run and the rule are
the fix script's support's (``core/foundation/low_precision.py``).

One verdict everywhere: the traced shape (output_check), other sizes and input sets
(shape_check), other values of an input (value_check) and ``compare`` all call
:func:`rounding_only`, and each says what it found in one line (:func:`rounding_note`), however
many outputs and sizes it covers.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fixport.core.foundation.comparison import to_numpy
from fixport.core.foundation.low_precision import (
    LOW_PRECISION_NAMES,
    float32_outputs,
    within_rounding,
)
from fixport.core.statistics.output_stats import OutputStats

__all__ = ["Rounding", "rounding_note", "rounding_only"]


@dataclass(frozen=True)
class Rounding:
    """One low-precision output whose difference from torch is that precision's rounding."""

    output: str
    dtype: str
    max_abs: float  # ONNX Runtime against torch's low-precision run
    onnx_error: float  # ONNX Runtime against the model run in float32
    torch_error: float  # torch's own low-precision run against the float32 one


def rounding_only(module: torch.nn.Module, inputs: Sequence[Any], torch_outputs: list[tuple[str, np.ndarray]],
                  onnx_outputs: Sequence[Any], failing: list[OutputStats]) -> dict[str, Rounding]:
    """Of the ``failing`` low-precision outputs, those within float16/bfloat16 rounding of a float32
    run of ``module`` on ``inputs`` (by output name)."""
    candidates = [s for s in failing if s.dtype in LOW_PRECISION_NAMES and not s.problem]
    if not candidates:
        return {}
    reference = float32_outputs(module, inputs)
    if reference is None:
        return {}
    position = {name: index for index, (name, _) in enumerate(torch_outputs)}
    accepted: dict[str, Rounding] = {}
    for stats in candidates:
        index = position.get(stats.name)
        if index is None or index >= len(reference) or index >= len(onnx_outputs):
            continue
        rounding, onnx_error, torch_error = within_rounding(torch_outputs[index][1], to_numpy(onnx_outputs[index]),
                                                            reference[index][1], stats.atol)
        if rounding:
            accepted[stats.name] = Rounding(stats.name, stats.dtype, stats.max_abs, onnx_error, torch_error)
    return accepted


def rounding_note(found: Sequence[Rounding], where: str) -> str:
    """One line for every output found ``where`` ("at the traced shape", "at other sizes (...)")
    to differ by rounding only: how many, the dtype, and the worst distances."""
    if not found:
        return ""
    outputs = sorted({r.output for r in found})
    dtypes = "/".join(sorted({r.dtype for r in found}))
    worst = max(found, key=lambda r: r.max_abs)
    named = outputs[0] if len(outputs) == 1 else f"{len(outputs)} outputs"
    return (f"{where.capitalize()}, {named} ({dtypes}) differ{'s' if len(outputs) == 1 else ''} from torch's beyond "
            f"{dtypes}'s tolerance (up to {worst.max_abs:.3g}), but that is {dtypes} rounding: against the model run "
            f"in float32, ONNX Runtime is at most {max(r.onnx_error for r in found):.3g} off and torch's own {dtypes} "
            f"run {max(r.torch_error for r in found):.3g}.")
