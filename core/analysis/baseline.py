"""The baseline job: the same call through plain ``torch.onnx.export``, run in ONNX Runtime at the
input sets Fixport's check uses, compared with torch by the same tolerance table.

Nothing of Fixport's export route takes part: no diagnosis hooks, no project fixes, no capture
settings, no custom opsets (the exporter's ``plain_export``). What is shared is what makes the two
comparable: the model as loaded (its example inputs and their names), the resolved options (the
model file's, then the caller's: exporter, opset, names, dynamic axes), the other sizes and
build()'s other input sets (``generalisation_shapes``), and the tolerances (``tolerances_for``).
A model called with keyword, nested or cache arguments is exported as Fixport's loader holds it:
its tensors flat, in the order and under the names torch.onnx gives them, and the model called
with its own structure rebuilt (``StructuredCall``), so ONNX Runtime takes the same feeds.
"""
from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fixport.core.analysis.job_context import open_job
from fixport.core.checks.output_check import tolerances_for, torch_outputs
from fixport.core.checks.shape_check import first_line, generalisation_shapes
from fixport.core.foundation.comparison import flatten_outputs, to_numpy
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.ort_session import ORT_LOG_FATAL_ONLY, create_session
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.records.baseline import BaselineResult, BaselineSet
from fixport.core.records.requests import BaselineRequest
from fixport.core.statistics.output_stats import compare_output_lists, worst_abs
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.words.vocabulary import LOADING_STAGE

EXAMPLE_INPUTS_LABEL = "example inputs"
_TERMINAL_CODES_RE = re.compile(r"\x1b\[[0-9;]*m")  # torch.onnx colours its messages


def plain_baseline(request: BaselineRequest, progress: ProgressCallback | None = None,
                   cancelled: CancelCallback | None = None) -> BaselineResult:
    """Export ``request.model`` with plain ``torch.onnx.export`` and check it as Fixport's check would."""
    started = time.perf_counter()
    report(progress, 0.0, LOADING_STAGE)
    context = open_job(request.model, request.options)
    loaded, options = context.loaded, context.export_options()
    options.capture_settings, options.custom_opsets = [], {}  # Fixport's choices, never the user's call
    result = BaselineResult(exporter=options.exporter, opset=options.opset)
    try:
        with tempfile.TemporaryDirectory(prefix="fixport-baseline-") as folder:
            path = Path(folder) / "plain.onnx"
            report(progress, 0.1, f"exporting with plain torch.onnx.export ({options.exporter})")
            try:
                context.exporter.plain_export(loaded, options, path)
            except Exception as exc:  # noqa: BLE001 -- whatever torch raises is the baseline's answer
                result.export_error = _exporter_error(exc)
                return result
            result.exported = True
            check_cancelled(cancelled)
            report(progress, 0.6, "running the plain export in ONNX Runtime")
            try:
                session = create_session(str(path), "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
            except Exception as exc:  # noqa: BLE001 -- ONNX Runtime's own exception types
                result.runtime_error = first_line(exc)
                return result
            _check_sets(result, session, loaded, options, request, cancelled)
    finally:
        result.seconds = round(time.perf_counter() - started, 3)
    return result


def _check_sets(result: BaselineResult, session: Any, loaded: LoadedModel, options: Any, request: BaselineRequest,
                cancelled: CancelCallback | None) -> None:
    """The example inputs, then every other set Fixport's check runs at (those torch refuses are noted)."""
    tolerances = tolerances_for(loaded)
    example = _run_set(session, loaded, EXAMPLE_INPUTS_LABEL, loaded.example_inputs, torch_outputs(loaded),
                       tolerances)
    if example.max_abs is None and not example.passed:  # ONNX Runtime cannot run it at all
        result.runtime_error = example.error
        return
    result.ran = True
    result.sets.append(example)
    for shape_set in generalisation_shapes(loaded, options, request.other_shapes, request.at_input_sets):
        check_cancelled(cancelled)
        try:
            with torch.no_grad():
                expected = flatten_outputs(loaded.module(*shape_set.inputs))
        except Exception as exc:  # noqa: BLE001 -- the model itself does not run there: not the export's fault
            result.not_checked.append(f"{shape_set.label}: torch itself fails there ({first_line(exc)})")
            continue
        result.sets.append(_run_set(session, loaded, shape_set.label, shape_set.inputs, expected, tolerances))


def _run_set(session: Any, loaded: LoadedModel, label: str, inputs: Sequence[torch.Tensor],
             expected: list[tuple[str, np.ndarray]], tolerances: ToleranceTable) -> BaselineSet:
    """One input set in ONNX Runtime against torch's outputs ``expected``."""
    try:
        actual = session.run(None, feeds_for(session, loaded.input_names, [to_numpy(t) for t in inputs]))
    except Exception as exc:  # noqa: BLE001 -- ONNX Runtime's own exception types
        return BaselineSet(label, passed=False, error=f"ONNX Runtime fails: {first_line(exc)}")
    stats = compare_output_lists(expected, actual, tolerances, keep_plot_data=False)
    failing = [s for s in stats if not s.passed]
    error = "; ".join(f"output {s.name} " + (s.problem or f"max abs {s.max_abs:.3g} beyond tolerance")
                      for s in failing)
    return BaselineSet(label, passed=not failing, max_abs=worst_abs(stats), error=error)


def _exporter_error(exc: BaseException) -> str:
    """The exporter's first line, and its cause's where it has one (torch.onnx's dynamo route wraps
    torch.export's error in one that names only the step)."""
    text = f"{type(exc).__name__}: {first_line(exc)}"
    cause = exc.__cause__
    if cause is not None:
        text += f" (because {type(cause).__name__}: {first_line(cause)})"
    return _TERMINAL_CODES_RE.sub("", text)
