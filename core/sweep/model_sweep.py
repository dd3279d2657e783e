"""One model with one exporter: a sweep row from the worker's "run one exporter" job (check,
optionally fix --auto, then compare), in a warm export worker."""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.records.baseline import BaselineResult, fixport_worse
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.exporter_comparison import ExporterRun, RunStep, StepStarted, problem_line
from fixport.core.records.requests import BaselineRequest, CompareRequest, RunExporterRequest
from fixport.core.records.results import AnalysisResult, AutoFixResult, ModelRequest
from fixport.core.sweep.rows import RowStatus, SweepRow, SweepSettings, Verdict
from fixport.core.words.cancel import CancelCallback
from fixport.core.words.errors import WorkerCrashed
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.runtimes import provider_for
from fixport.core.words.vocabulary import LOADING_STAGE, TRACING_STAGE
from fixport.core.worker.client import ExportWorker

MAX_MESSAGE_CHARS = 300

StepCallback = Callable[[str], None]  # told the name of each step as it starts


def sweep_model(worker: ExportWorker, model: Path, exporter: str, settings: SweepSettings,
                on_step: StepCallback | None = None, cancelled: CancelCallback | None = None) -> SweepRow:
    """The row for ``model`` with ``exporter``, from the worker's "run one exporter" job. A model that
    cannot be loaded or compared is an error row with the reason; :class:`~fixport.core.words.cancel.Cancelled`
    (the caller stopped) propagates."""
    row = SweepRow(model=str(model), exporter=exporter)
    options: dict[str, Any] = {"exporter": exporter}
    if settings.opset is not None:
        options["opset"] = settings.opset
    clock = _StepClock(row, on_step)
    request = ModelRequest(str(model))
    compare_settings = CompareRequest(request, provider=provider_for(settings.runtime, "cpu"))
    run = _run(worker, RunExporterRequest(request, options, auto_fix=settings.fix, compare=compare_settings),
               settings, clock, cancelled)
    _fill_row(row, run, settings)
    if settings.baseline:
        clock.start("baseline")
        try:
            row.baseline = _baseline(worker, BaselineRequest(request, options), settings, cancelled)
        finally:
            clock.stop()
        errored = bool(run.failed_step)
        problems = [(problem.display_kind, problem.reason) for problem in ([] if errored else run.left)]
        outcome = (f"Fixport's run ended in an error: {row.message}" if errored
                   else "Fixport's export differs from torch")
        row.fixport_worse = fixport_worse(row.baseline, row.passed, problems, outcome)
    return row


class _StepClock:
    """Each step's seconds into the row (the last one's ends with the job), each start told to ``on_step``."""

    def __init__(self, row: SweepRow, on_step: StepCallback | None) -> None:
        self.row, self.on_step = row, on_step
        self.step, self.started = "", 0.0

    def start(self, step: str) -> None:
        if step == self.step:
            return
        self.stop()
        if self.on_step is not None:
            self.on_step(step)
        self.step, self.started = step, time.monotonic()

    def stop(self) -> None:
        if self.step:
            seconds = self.row.seconds.get(self.step, 0.0) + time.monotonic() - self.started
            self.row.seconds[self.step] = round(seconds, 3)
        self.step = ""


def _run(worker: ExportWorker, request: RunExporterRequest, settings: SweepSettings, clock: _StepClock,
         cancelled: CancelCallback | None) -> ExporterRun:
    """The job's run; a step that failed in the worker (a crash, a stall, an error it raised) is
    recorded on the run as far as the steps before it got. A crash while converting or checking is
    the one problem check found, as `check` lists it, and the run goes on from there."""
    latest = StepStarted(RunStep.CHECK.value, ExporterRun(request.options["exporter"]))

    def started(piece: object) -> None:
        nonlocal latest
        if isinstance(piece, StepStarted):
            latest = piece
            clock.start(piece.step)

    if request.analysis is None:  # check's time runs from the job's submission: a worker's start counts
        clock.start(latest.step)
    try:
        return worker.run(request, cancelled=cancelled, timeout_s=settings.timeout_s, partial=started)
    except WorkerCrashed as crash:
        if latest.step != RunStep.CHECK or request.analysis is not None or crash.stage in (
                "", LOADING_STAGE, TRACING_STAGE):
            return latest.run.failed(RunStep(latest.step), crash.message, crash.hint)
        crashed = AnalysisResult.of_crash(request.model.path, request.options, crash)
        return _run(worker, replace(request, analysis=crashed), settings, clock, cancelled)
    except FixportError as error:
        return latest.run.failed(RunStep(latest.step), error.message, error.hint)
    finally:
        clock.stop()


def _baseline(worker: ExportWorker, request: BaselineRequest, settings: SweepSettings,
              cancelled: CancelCallback | None) -> BaselineResult:
    """The plain export of the same call (the options the sweep gave, not those fix --auto chose)."""
    try:
        return worker.run(request, cancelled=cancelled, timeout_s=settings.timeout_s)
    except FixportError as error:  # the worker could not run it (a crash, a stall): the plain export failed
        return BaselineResult(request.options["exporter"], request.options.get("opset") or 0,
                              export_error=_first_line(error.message))


def _fill_row(row: SweepRow, run: ExporterRun, settings: SweepSettings) -> None:
    """The row's columns from the run's records (the status stays what the steps before an error found)."""
    if run.failed_step == RunStep.CHECK:
        _error(row, run)
        return
    row.problems = _problem_lines(run.found)
    row.opset = run.opset
    row.status = (RowStatus.PROBLEMS if run.found else RowStatus.CLEAN).value
    if run.auto_fix is not None:
        row.fixes = _fixes_chosen(run.auto_fix)
    if run.failed_step == RunStep.FIX:
        _error(row, run)
        return
    row.left = _problem_lines(run.left)
    row.status = (RowStatus.CLEAN if not run.found else RowStatus.PROBLEMS if run.left else RowStatus.FIXED).value
    blocking = run.blocking
    if blocking:
        row.verdict = Verdict.NOT_COMPARED.value
        kinds = ", ".join(dict.fromkeys(_problem_lines(blocking)))
        row.message = (f"{len(blocking)} problem(s) keep the export from running in ONNX Runtime: {kinds}"
                       + ("" if settings.fix else "; --fix tries the built-in fixes"))
    elif run.failed_step:
        _error(row, run)
    elif run.comparison is not None:
        _record_comparison(row, run.comparison)


def _error(row: SweepRow, run: ExporterRun) -> None:
    row.verdict = Verdict.ERROR.value
    row.message = _first_line(run.failure)


def _fixes_chosen(fixed: AutoFixResult) -> list[str]:
    """Each fix as one line: a raised opset, a capture setting, a fix per op kind."""
    raised = [f"opset {fixed.opset_raised[0]} -> {fixed.opset_raised[1]}"] if fixed.opset_raised else []
    settings = [f"capture setting {setting}" for setting in fixed.capture_settings]
    return raised + settings + [f"{choice.kind}: {choice.template_id} [{choice.family or 'template'}]"
                                for choice in fixed.choices]


def _record_comparison(row: SweepRow, compared: CompareResult) -> None:
    errors = [output.max_abs for output in compared.outputs if not math.isnan(output.max_abs)]
    row.max_abs = max(errors) if errors else None
    row.verdict = (Verdict.PASS if compared.passed else Verdict.FAIL).value
    analysis = compared.node_analysis
    if not compared.passed:
        first = analysis.first_divergent if analysis else None
        if first is not None:
            row.first_divergent = f"{first.onnx_node} ({first.onnx_kind})" + (f" at {first.source}" if first.source
                                                                             else "")
        failed = [output.name for output in compared.outputs if not output.passed]
        row.message = _first_line("; ".join([*compared.baked_inputs, *(f"output {name} beyond tolerance"
                                                                      for name in failed)]))


def _problem_lines(problems: list[UnsupportedNode]) -> list[str]:
    return [problem_line(problem, with_source=False) for problem in problems]


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:MAX_MESSAGE_CHARS]
