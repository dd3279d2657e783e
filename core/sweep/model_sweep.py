"""One model with one exporter: check, optionally fix --auto, then compare, in a warm export worker."""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fixport.core.model.baseline import BaselineResult, fixport_worse
from fixport.core.model.cancel import CancelCallback
from fixport.core.model.compare_result import CompareResult
from fixport.core.model.errors import FixportError, WorkerCrashed
from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.requests import AnalyzeRequest, AutoFixRequest, BaselineRequest, CompareRequest
from fixport.core.model.results import AnalysisResult, AutoFixResult, ModelRequest
from fixport.core.model.runtimes import provider_for
from fixport.core.model.vocabulary import LOADING_STAGE, TRACING_STAGE, ProblemReason
from fixport.core.sweep.rows import RowStatus, SweepRow, SweepSettings, Verdict
from fixport.core.worker.client import ExportWorker

# Problems of an export that still runs in ONNX Runtime: compare can measure them.
PROBLEMS_COMPARE_CAN_RUN = frozenset({ProblemReason.MISMATCH, ProblemReason.RANDOM_OUTPUT,
                                      ProblemReason.SHAPE_SPECIALISED, ProblemReason.BAKED_INPUT})
MAX_MESSAGE_CHARS = 300

StepCallback = Callable[[str], None]  # told the name of each step as it starts


def sweep_model(worker: ExportWorker, model: Path, exporter: str, settings: SweepSettings,
                on_step: StepCallback | None = None, cancelled: CancelCallback | None = None) -> SweepRow:
    """The row for ``model`` with ``exporter``. A model that cannot be loaded or compared is an error
    row with the reason; :class:`~fixport.core.model.cancel.Cancelled` (the caller stopped) propagates."""
    row = SweepRow(model=str(model), exporter=exporter)
    request = ModelRequest(str(model))
    options: dict[str, Any] = {"exporter": exporter}
    if settings.opset is not None:
        options["opset"] = settings.opset

    def run(step: str, job: object) -> Any:
        if on_step is not None:
            on_step(step)
        started = time.monotonic()
        try:
            return worker.run(job, cancelled=cancelled, timeout_s=settings.timeout_s)
        finally:
            row.seconds[step] = round(row.seconds.get(step, 0.0) + time.monotonic() - started, 3)

    left = _fixport_row(run, row, request, dict(options), settings)
    if settings.baseline:
        row.baseline = _baseline(run, request, options)
        problems = [(problem.display_kind, problem.reason) for problem in (left.unsupported if left else [])]
        outcome = "Fixport's export differs from torch" if left else f"Fixport's run ended in an error: {row.message}"
        row.fixport_worse = fixport_worse(row.baseline, row.passed, problems, outcome)
    return row


def _baseline(run, request: ModelRequest, options: dict[str, Any]) -> BaselineResult:
    """The plain export of the same call (the options the sweep gave, not those fix --auto chose)."""
    try:
        return run("baseline", BaselineRequest(request, options))
    except FixportError as error:  # the worker could not run it (a crash, a stall): the plain export failed
        return BaselineResult(options["exporter"], options.get("opset") or 0,
                              export_error=_first_line(error.message))


def _fixport_row(run, row: SweepRow, request: ModelRequest, options: dict[str, Any],
                 settings: SweepSettings) -> AnalysisResult | None:
    """check, fix --auto and compare into ``row``; what is left after them (None: an error row)."""
    left: AnalysisResult | None = None
    try:
        check = _checked(run, request, options)
        row.problems = _problem_lines(check)
        row.opset = check.options.opset
        row.status = (RowStatus.PROBLEMS if check.unsupported else RowStatus.CLEAN).value
        left, mappings = check, []
        if check.unsupported and settings.fix:
            fixed: AutoFixResult = run("fix", AutoFixRequest(request, options, analysis=check))
            mappings, left = list(fixed.mappings), fixed.after
            row.fixes = _fixes_chosen(fixed)
            row.opset = fixed.after.options.opset
            options = _options_after_fix(options, fixed)
        row.left = _problem_lines(left)
        row.status = (RowStatus.CLEAN if not check.unsupported else RowStatus.PROBLEMS if left.unsupported
                      else RowStatus.FIXED).value
        blocking = [p for p in left.unsupported if p.reason not in PROBLEMS_COMPARE_CAN_RUN]
        if blocking:
            row.verdict = Verdict.NOT_COMPARED.value
            kinds = ", ".join(dict.fromkeys(_problem_line(problem) for problem in blocking))
            row.message = (f"{len(blocking)} problem(s) keep the export from running in ONNX Runtime: {kinds}"
                           + ("" if settings.fix else "; --fix tries the built-in fixes"))
            return left
        compared: CompareResult = run("compare", CompareRequest(request, options, mappings,
                                                                provider=provider_for(settings.runtime, "cpu")))
        _record_comparison(row, compared)
    except FixportError as error:
        row.verdict = Verdict.ERROR.value  # the status stays what the steps before found
        row.message = _first_line(error.message)
        return None
    return left


def _checked(run, request: ModelRequest, options: dict[str, Any]) -> AnalysisResult:
    """check's analysis; a crash while converting is the one problem found, as `check` lists it."""
    try:
        return run("check", AnalyzeRequest(request, options))
    except WorkerCrashed as crash:
        if crash.stage in ("", LOADING_STAGE, TRACING_STAGE):
            raise
        return AnalysisResult.of_crash(request.path, options, crash)


def _fixes_chosen(fixed: AutoFixResult) -> list[str]:
    """Each fix as one line: a raised opset, a capture setting, a fix per op kind."""
    raised = [f"opset {fixed.opset_raised[0]} -> {fixed.opset_raised[1]}"] if fixed.opset_raised else []
    settings = [f"capture setting {setting}" for setting in fixed.capture_settings]
    return raised + settings + [f"{choice.kind}: {choice.template_id} [{choice.family or 'template'}]"
                                for choice in fixed.choices]


def _options_after_fix(options: dict[str, Any], fixed: AutoFixResult) -> dict[str, Any]:
    """The export options the fixes were chosen under: a raised opset, the capture settings chosen."""
    after = dict(options)
    if fixed.opset_raised:
        after["opset"] = fixed.opset_raised[1]
    if fixed.capture_settings:
        after["capture_settings"] = list(fixed.after.options.capture_settings)
    return after


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


def _problem_lines(analysis: AnalysisResult) -> list[str]:
    return [_problem_line(problem) for problem in analysis.unsupported]


def _problem_line(problem: UnsupportedNode) -> str:
    return f"{problem.display_kind} ({problem.reason})"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:MAX_MESSAGE_CHARS]
