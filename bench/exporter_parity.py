"""The two exporters side by side: the real-model corpus and the failing examples, `check` then `fix --auto`.

    python bench/exporter_parity.py [--only NAME,NAME] [--timeout 600] [--json parity.json]

For every model of examples/corpus/ and every example of examples/ that declares a problem (for
either exporter), and for each exporter (``torchscript``: ``dynamo=False``; ``dynamo``: ``dynamo=True``),
at the opset the file asks for: one plain ``torch.onnx.export`` run once in ONNX Runtime (in a forked
child, :mod:`plain_export`), then in a warm worker `check` and, when it lists problems, `fix --auto`
(started from that check, as the window does). Per model and exporter:

- failing: the plain export fails (or ONNX Runtime cannot run it), or `check` lists a problem;
- diagnosed: `check` listed at least one problem with a reason and did not crash;
- auto-fixed: nothing left unsupported after `fix --auto`, every fix runs in ONNX Runtime, and the
  fixed model matches torch within the file's ``fix_tolerance``;
- max error: the fixed model in ONNX Runtime against torch (a model that does not fail: its own).

Prints the table, the problems and the fixes chosen per model, and the totals; for dynamo (an
exporter that captures, then translates), the failing models split by stage: a missing or failing
ONNX function vs. a capture failure.
``--json FILE`` also keeps every rejected candidate and why.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fixport.bench.plain_export import PlainExportProbe
from fixport.core.foundation.errors import FixportError
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import AnalysisResult, ModelRequest
from fixport.core.words.cancel import Cancelled
from fixport.core.words.vocabulary import EXPORTERS, ProblemReason
from fixport.core.worker.client import ExportWorker
from fixport.examples.catalog import ExampleInfo, list_examples
from fixport.examples.corpus import list_corpus

DEFAULT_TIMEOUT_S = 600.0  # per model and exporter: check and fix --auto together
# Dynamo failures past capture: torch.export got the graph, an op's ONNX function is missing,
# raises, or gives what ONNX Runtime refuses or computes differently.
FUNCTION_REASONS = frozenset({ProblemReason.NO_ONNX_FUNCTION, ProblemReason.TRANSLATION_FAILED,
                              ProblemReason.RUNTIME_ERROR, ProblemReason.MISMATCH})
CAPTURE_REASONS = frozenset({ProblemReason.CAPTURE_FAILED})
# Reasons only an exporter with a capture stage and a translation stage gives (dynamo): the totals
# split its failing models by stage.
STAGED_REASONS = CAPTURE_REASONS | {ProblemReason.NO_ONNX_FUNCTION, ProblemReason.TRANSLATION_FAILED}
MESSAGE_CHARS = 400  # of each problem left, in --json


@dataclass(frozen=True)
class Case:
    """One model file: a corpus architecture or an example."""

    info: ExampleInfo
    group: str  # "corpus" or "example"
    library: str = "torch"

    @property
    def name(self) -> str:
        return self.info.name


@dataclass
class Outcome:
    """What one exporter made of one model, check and fix --auto."""

    model: str
    group: str
    exporter: str
    plain: str | None = None  # why the plain export failed; None: it exported and ran
    problems: list[str] = field(default_factory=list)  # check's "kind: reason", one per problem
    left: list[str] = field(default_factory=list)  # after fix --auto
    left_messages: list[str] = field(default_factory=list)  # what each problem left says, first lines
    families: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)  # "kind -> template (family)"
    rejected: list[str] = field(default_factory=list)
    no_template: list[str] = field(default_factory=list)
    max_abs: float | None = None
    tolerance: float = 1e-4  # the file's fix_tolerance: the most max_abs may be once fixed
    runs_in_onnxruntime: bool = True  # every fix chosen (a custom-domain node does not)
    opset_raised: tuple[int, int] | None = None
    error: str = ""  # the worker's own failure: a crash, a timeout, a model it could not open
    error_in: str = ""  # "check" or "fix --auto"
    seconds: float = 0.0

    @property
    def failing(self) -> bool:
        return self.plain is not None or bool(self.problems)

    @property
    def diagnosed(self) -> bool:
        return bool(self.problems) and self.error_in != "check" and ProblemReason.WORKER_CRASH not in self.reasons

    @property
    def fixed(self) -> bool:
        within = self.max_abs is None or self.max_abs <= self.tolerance
        return self.diagnosed and not self.error and not self.left and self.runs_in_onnxruntime and within

    @property
    def reasons(self) -> set[str]:
        return {p.rsplit(": ", 1)[-1] for p in self.problems}

    @property
    def stage(self) -> str:
        """Where a failing dynamo export stops: 'capture', 'function' (an op's ONNX function) or 'other'."""
        if self.reasons & CAPTURE_REASONS:
            return "capture"
        return "function" if self.reasons & FUNCTION_REASONS else "other"


def list_cases(only: set[str]) -> list[Case]:
    """The corpus, then the examples that declare a problem for either exporter."""
    cases = [Case(c.info, "corpus", c.library) for c in list_corpus()]
    cases += [Case(info, "example") for info in list_examples()
              if info.expected_unsupported or info.expected_unsupported_dynamo]
    return [c for c in cases if not only or c.name in only]


def _problem_lines(analysis: AnalysisResult) -> list[str]:
    return [f"{p.display_kind}: {p.reason}" for p in analysis.unsupported]


def measure(case: Case, exporter: str, worker: ExportWorker, probe: PlainExportProbe, timeout_s: float) -> Outcome:
    """The plain export, then check and (when it finds problems) fix --auto in the warm worker."""
    outcome = Outcome(case.name, case.group, exporter, tolerance=case.info.fix_tolerance)
    outcome.plain = probe.why_failing(case.info.path, case.info.opset, exporter, case.info.export_options)
    started = time.monotonic()
    deadline = started + timeout_s
    request, options = ModelRequest(str(case.info.path)), {"exporter": exporter}

    def past_deadline() -> bool:
        return time.monotonic() > deadline

    try:
        outcome.error_in = "check"
        check = worker.run(AnalyzeRequest(request, options), cancelled=past_deadline, timeout_s=timeout_s)
        outcome.problems = _problem_lines(check)
        outcome.max_abs = None if check.unsupported else check.output_max_abs
        if check.unsupported:
            outcome.error_in = "fix --auto"
            result = worker.run(AutoFixRequest(request, options, analysis=check), cancelled=past_deadline,
                                timeout_s=timeout_s)
            outcome.left = _problem_lines(result.after)
            outcome.left_messages = [f"{p.display_kind}: {' '.join(p.message.split())[:MESSAGE_CHARS]}"
                                     for p in result.after.unsupported]
            outcome.choices = [f"{c.kind} -> {c.template_id} ({c.family})" for c in result.choices]
            outcome.families = sorted({c.family for c in result.choices})
            outcome.runs_in_onnxruntime = all(c.runs_in_onnxruntime for c in result.choices)
            outcome.rejected, outcome.no_template = [r.line() for r in result.rejected], list(result.no_template)
            outcome.opset_raised = result.opset_raised
            if not result.after.unsupported and outcome.runs_in_onnxruntime:
                outcome.max_abs = result.after.output_max_abs
        outcome.error_in = ""
    except Cancelled:
        outcome.error = f"timed out after {timeout_s:.0f} s"
    except FixportError as error:  # a crash, a stalled job, a model the worker could not open or trace
        outcome.error = f"{type(error).__name__}: {error.message.splitlines()[0][:200]}"
    outcome.seconds = time.monotonic() - started
    return outcome


def _yes(flag: bool, shown: bool = True) -> str:
    return ("yes" if flag else "NO") if shown else ""


def _cells(outcome: Outcome) -> str:
    failing = outcome.failing
    error = f"{outcome.max_abs:.1e}" if outcome.max_abs is not None else "—"
    raised = f" (opset {outcome.opset_raised[1]})" if outcome.fixed and outcome.opset_raised else ""
    return (f"{'yes' if failing else 'no'} | {_yes(outcome.diagnosed, failing)} | "
            f"{_yes(outcome.fixed, failing)}{raised} | {error}")


def print_table(rows: dict[str, dict[str, Outcome]]) -> None:
    print("| model | set | " + " | ".join(f"{e} failing | {e} diagnosed | {e} auto-fixed | {e} max error"
                                        for e in EXPORTERS) + " |")
    print("|---|---|" + "---|---|---|---|" * len(EXPORTERS))
    for name, by_exporter in rows.items():
        group = next(iter(by_exporter.values())).group
        print(f"| {name} | {group} | " + " | ".join(_cells(by_exporter[e]) for e in EXPORTERS) + " |")


def print_details(outcomes: list[Outcome]) -> None:
    print("\n| model | exporter | check found | fix --auto chose | left |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        if not o.failing:
            continue
        found = ", ".join(f"{p} ×{n}" if n > 1 else p for p, n in Counter(o.problems).items())
        found = found or f"nothing (plain export: {o.plain})"
        left = ", ".join(sorted(set(o.left))) + (f" {o.error_in}: {o.error}" if o.error else "")
        raised = f" (opset {o.opset_raised[0]} -> {o.opset_raised[1]})" if o.opset_raised else ""
        print(f"| {o.model} | {o.exporter} | {found} | {'; '.join(o.choices)}{raised} | {left} |")


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f} %)" if total else "0"


def print_totals(outcomes: list[Outcome]) -> None:
    print()
    for exporter in EXPORTERS:
        for group in ("", "corpus", "example"):
            mine = [o for o in outcomes if o.exporter == exporter and group in ("", o.group)]
            if group and not mine:
                continue
            failing = [o for o in mine if o.failing]
            raised = sum(o.fixed and o.opset_raised is not None for o in failing)
            print(f"{exporter}{', ' + group if group else ''}: {len(mine)} models, failing {len(failing)}, "
                  f"diagnosed {_share(sum(o.diagnosed for o in failing), len(failing))}, "
                  f"auto-fixed {_share(sum(o.fixed for o in failing), len(failing))} ({raised} by raising the opset)")
    for exporter in EXPORTERS:
        failing = [o for o in outcomes if o.exporter == exporter and o.failing]
        if not any(o.reasons & STAGED_REASONS for o in failing):
            continue  # not an exporter that captures, then translates
        for stage, words in (("function", "a missing or failing ONNX function"), ("capture", "capture failure"),
                             ("other", "other (not diagnosed, export_failed, shape_specialised, crash)")):
            group = [o for o in failing if o.stage == stage]
            print(f"{exporter}, {words}: {len(group)} models, "
                  f"auto-fixed {_share(sum(o.fixed for o in group), len(group))}"
                  + (f": {', '.join(o.model for o in group)}" if group else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per model and exporter")
    parser.add_argument("--json", default="", help="write every outcome, rejected candidates included, here")
    args = parser.parse_args()
    cases = list_cases(set(filter(None, args.only.split(","))))
    worker, probe = ExportWorker(job_timeout_s=args.timeout), PlainExportProbe(timeout_s=args.timeout)
    rows: dict[str, dict[str, Outcome]] = {}
    started = time.perf_counter()
    try:
        for index, case in enumerate(cases, 1):
            if importlib.util.find_spec(case.library) is None:
                print(f"[{index}/{len(cases)}] {case.name}: {case.library} is not installed, skipped", flush=True)
                continue
            for exporter in EXPORTERS:
                outcome = measure(case, exporter, worker, probe, args.timeout)
                rows.setdefault(case.name, {})[exporter] = outcome
                print(f"[{index}/{len(cases)}] {case.name} {exporter}: {_cells(outcome)} "
                      f"{sorted(outcome.reasons)} {outcome.families} {outcome.error} ({outcome.seconds:.0f} s)",
                      flush=True)
    finally:
        worker.stop()
        probe.stop()
    outcomes = [o for by_exporter in rows.values() for o in by_exporter.values()]
    print(f"\n{len(rows)} models, {time.perf_counter() - started:.0f} s\n")
    print_table(rows)
    print_details(outcomes)
    print_totals(outcomes)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{**asdict(o), "failing": o.failing, "diagnosed": o.diagnosed, "fixed": o.fixed,
              "stage": o.stage if o.failing else ""} for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
