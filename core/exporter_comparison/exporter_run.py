"""The "run one exporter" job: check, fix --auto, compare, into an :class:`ExporterRun` of records.

The one copy of this pipeline: sweep rows (``core/sweep/model_sweep.py``) submit it to a worker, and
`compare --exporters` (``job.py``) runs it once per exporter before holding the two to each other.
Each step's start goes out as a :class:`StepStarted` partial piece, so a caller that outlives a
crash of the worker knows where it came and what the steps before found.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fixport.core.analysis.analysis import analyze
from fixport.core.comparison.compare_job import compare
from fixport.core.fixing.auto_fix import auto_fix
from fixport.core.foundation.errors import FixportError, ModelLoadError
from fixport.core.records.exporter_comparison import (
    FIXES_FROM_AUTO_FIX,
    FIXES_FROM_PROJECT,
    NO_AUTO_FIX,
    NO_FIXES_NEEDED,
    ExporterRun,
    RunStep,
    StepStarted,
)
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, CompareRequest, RunExporterRequest
from fixport.core.words.cancel import CancelCallback, Cancelled, ProgressCallback, report_partial

# Each step's share of the job's progress, and its label where the caller asks for labels
_STEP_SPAN = {RunStep.CHECK: (0.0, 0.2), RunStep.FIX: (0.2, 0.3), RunStep.COMPARE: (0.5, 0.5)}
_STEP_LABEL = {RunStep.CHECK: "checking", RunStep.FIX: "fix --auto", RunStep.COMPARE: "comparing"}


def run_exporter(request: RunExporterRequest, progress: ProgressCallback | None = None,
                 cancelled: CancelCallback | None = None, *, label_steps: bool = False) -> ExporterRun:
    """See the module docstring. A step's :class:`FixportError` is recorded in the run (the steps after
    it do not run); a model that cannot be loaded, and Cancel, propagate. ``label_steps`` prefixes
    each progress message with its step (a worker's crash names its last message as its stage, so
    the sweep keeps them plain)."""
    options = dict(request.options)
    run = ExporterRun(options["exporter"])

    def step(name: RunStep) -> ProgressCallback | None:
        report_partial(progress, StepStarted(name.value, run))
        return within(progress, *_STEP_SPAN[name], _STEP_LABEL[name] if label_steps else "")

    try:
        plain = request.analysis or analyze(AnalyzeRequest(request.model, options, [],
                                                           other_shapes=request.other_shapes),
                                            step(RunStep.CHECK), cancelled)
    except (Cancelled, ModelLoadError):
        raise
    except FixportError as exc:
        return run.failed(RunStep.CHECK, exc.message, exc.hint)
    run.opset, run.found, run.left = plain.options.opset, list(plain.unsupported), list(plain.unsupported)
    run.mappings = list(request.mappings)
    if request.mappings:
        run.fixes_from, run.left = FIXES_FROM_PROJECT, []  # what they leave is compare's to find
    elif not plain.unsupported:
        run.fixes_from = NO_FIXES_NEEDED
    elif not request.auto_fix:
        run.fixes_from = NO_AUTO_FIX
    else:
        run.fixes_from = FIXES_FROM_AUTO_FIX
        try:
            fixed = auto_fix(AutoFixRequest(request.model, options, analysis=plain,
                                            other_shapes=request.other_shapes), step(RunStep.FIX), cancelled)
        except (Cancelled, ModelLoadError):
            raise
        except FixportError as exc:
            return run.failed(RunStep.FIX, exc.message, exc.hint)
        run.take_auto_fix(fixed, options, pin_opset=True)
    if run.auto_fix is None:
        run.options = options
    if run.blocking:
        return run
    settings = request.compare or CompareRequest(request.model)
    try:
        run.comparison = compare(replace(settings, model=request.model, options=run.options, mappings=run.mappings,
                                         other_shapes=request.other_shapes, from_project=bool(request.mappings)),
                                 step(RunStep.COMPARE), cancelled)
    except Cancelled:
        raise
    except FixportError as exc:
        return run.failed(RunStep.COMPARE, exc.message, exc.hint)
    return run


def within(progress: ProgressCallback | None, start: float, width: float,
           label: str = "") -> Callable[..., None] | None:
    """``progress`` for one stage: its fractions mapped into [start, start + width], its messages labelled."""
    if progress is None:
        return None
    return lambda fraction, message="": progress(start + width * fraction,
                                                 f"{label}: {message}" if label and message else label or message)
