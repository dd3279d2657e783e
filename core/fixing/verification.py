"""Does a fixed export compute what torch computes? ONNX Runtime (CPU) against the torch model.

Reuses the check's pieces (torch's outputs kept per model, the per-dtype tolerances, ``compare_arrays``,
``create_session``) on the example inputs; the model file's ``fix_tolerance`` is the absolute
tolerance when it declares one. ``fix --auto`` keeps a candidate fix only when this passes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fixport.core.exporters.output_check import tolerances_for, torch_outputs
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.output_stats import compare_arrays, to_numpy
from fixport.core.model.results import ModelRequest
from fixport.core.onnx_io.ort_session import create_session, feeds_for


@dataclass
class Verdict:
    """Whether the export matched torch, and the worst absolute difference or why not."""

    passed: bool
    max_abs: float
    why: str = ""


def matches_torch(model: ModelRequest, onnx_path: str) -> Verdict:
    """Run ``onnx_path`` in plain ONNX Runtime and compare it with the torch model's outputs."""
    loaded = open_model(model)
    tolerances = tolerances_for(loaded)
    try:
        session = create_session(onnx_path, "cpu").session
        feeds = feeds_for(session, loaded.input_names, [to_numpy(t) for t in loaded.example_inputs])
        actual = session.run(None, feeds)
    except Exception as error:  # ORT refuses the model or fails to run it
        return Verdict(False, float("nan"), f"ONNX Runtime: {type(error).__name__}: {str(error)[:300]}")
    expected = torch_outputs(loaded)
    if len(actual) != len(expected):
        return Verdict(False, float("nan"), f"ONNX has {len(actual)} output(s), torch {len(expected)}")
    worst = 0.0
    for (name, reference), value in zip(expected, actual):
        rtol, atol_ = tolerances.for_dtype(str(reference.dtype))
        stats = compare_arrays(name, reference, np.asarray(value), rtol, atol_, 0)
        worst = max(worst, stats.max_abs) if stats.max_abs == stats.max_abs else worst
        if not stats.passed:
            detail = stats.problem or f"max abs {stats.max_abs:.3g} > atol {atol_:g} (rtol {rtol:g})"
            return Verdict(False, stats.max_abs, f"output {name} does not match torch: {detail}")
    return Verdict(True, worst)
