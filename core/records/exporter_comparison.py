"""Results of comparing the exports of two exporters for one model (no torch import).

Each export is held to torch on its own (a :class:`~fixport.core.records.compare_result.CompareResult`
and a per-node analysis), and the two are held to each other: per output, and per node where both
exports link a value to the same source line, module scope and op.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fixport.core.project.project import FixMapping
from fixport.core.records.compare_result import CompareResult, NodeError
from fixport.core.records.results import AutoFixResult
from fixport.core.statistics.output_stats import json_number
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import keeps_compare_from_running

EXPORTER_SEPARATOR = ","
# Where an export's fixes came from (ExporterRun.fixes_from)
FIXES_FROM_PROJECT = "the project"
FIXES_FROM_AUTO_FIX = "fix --auto (not saved)"
NO_FIXES_NEEDED = "none needed"
NO_AUTO_FIX = "none (the plain export fails; --no-auto-fix)"


class RunStep(StrEnum):
    """The steps of one exporter's run, in order; the values name them in sweep rows and timings."""

    CHECK = "check"
    FIX = "fix"
    COMPARE = "compare"


# How a step's failure is introduced in ExporterRun.error (compare's error speaks for itself)
_FAILED_STEP_PREFIX = {RunStep.CHECK: "the plain export failed: ", RunStep.FIX: "fix --auto failed: ",
                       RunStep.COMPARE: ""}


def problem_line(problem: UnsupportedNode, *, with_source: bool = True) -> str:
    """``aten::threshold (symbolic_rejected) at model.py:12`` (without the place: sweep rows)."""
    where = f" at {problem.source}" if problem.source and with_source else ""
    return f"{problem.display_kind} ({problem.reason}){where}"


@dataclass
class ExporterRun:
    """One exporter's run (the worker's "run one exporter" job): what its plain export needed, the
    fixes its compared export applied, and that export against torch. Sweep rows and each side of
    `compare --exporters` are built from it."""

    exporter: str
    opset: int | None = None  # the opset compared (raised by fix --auto where it had to)
    found: list[UnsupportedNode] = field(default_factory=list)  # the plain export's problems
    auto_fix: AutoFixResult | None = None  # fix --auto's search, when it ran
    mappings: list[FixMapping] = field(default_factory=list)  # the fixes the compared export applied
    options: dict[str, Any] = field(default_factory=dict)  # the options it was compared with (after fix --auto's)
    fixes_from: str = ""  # "none needed", "the project", "fix --auto (not saved)"
    # problems known to be left for compare (after fix --auto; none known with the project's fixes)
    left: list[UnsupportedNode] = field(default_factory=list)
    comparison: CompareResult | None = None  # its outputs against torch, its size and latency
    first_divergent: NodeError | None = None  # its first node out of tolerance against torch
    nodes_compared: int = 0
    failed_step: str = ""  # the RunStep that raised ('' when none did)
    failure: str = ""  # what it raised
    hint: str = ""  # what to do about ``error``
    # the ONNX graph compared node by node (no constant folding), for the window's side-by-side panes
    onnx_graph: Graph | None = None

    @classmethod
    def from_auto_fix(cls, result: AutoFixResult, options: Mapping[str, Any] | None = None, *,
                      pin_opset: bool = True) -> ExporterRun:
        """The run of Fix all and `fix --auto` (which stop before compare): ``result``'s search on
        ``options``, with what it found, fixed and left."""
        run = cls(result.after.options.exporter, opset=result.before.options.opset,
                  found=list(result.before.unsupported), left=list(result.before.unsupported))
        run.take_auto_fix(result, options or {}, pin_opset=pin_opset)
        return run

    def take_auto_fix(self, result: AutoFixResult, options: Mapping[str, Any], *, pin_opset: bool) -> None:
        """Its fix step, done by ``result``: the fixes chosen, the problems left, and the options after
        the fix (the one rule: :meth:`AutoFixResult.option_edits`) applied to ``options``."""
        self.fixes_from, self.auto_fix = FIXES_FROM_AUTO_FIX, result
        self.mappings, self.left = list(result.mappings), list(result.after.unsupported)
        self.opset = result.after.options.opset
        self.options = {**options, **result.option_edits(options, pin_opset=pin_opset)}

    @property
    def compare_can_run(self) -> bool:
        """No step failed and no problem left keeps compare from running (the one rule)."""
        return not self.failed_step and not self.blocking

    @property
    def compared(self) -> bool:
        return self.comparison is not None

    @property
    def passed(self) -> bool:
        return self.comparison is not None and self.comparison.passed

    @property
    def blocking(self) -> list[UnsupportedNode]:
        """The problems left that keep compare from running (the one rule: keeps_compare_from_running)."""
        return [problem for problem in self.left if keeps_compare_from_running(problem.reason)]

    @property
    def problems(self) -> list[str]:
        """The plain export's problems, one line each."""
        return [problem_line(problem) for problem in self.found]

    @property
    def left_unfixed(self) -> list[str]:
        """The problems fix --auto left, one line each."""
        return [] if self.auto_fix is None else [problem_line(p) for p in self.auto_fix.after.unsupported]

    @property
    def fixes(self) -> list[str]:
        """The fixes the compared export applied, one line each, then what else fix --auto changed."""
        lines = [f"{mapping.label} -> {mapping.template_id}" for mapping in self.mappings]
        if self.auto_fix is not None and self.auto_fix.opset_raised:
            lines.append("opset raised from {} to {}".format(*self.auto_fix.opset_raised))
        return lines + [f"captured with {setting}" for setting in (self.auto_fix.capture_settings
                                                                   if self.auto_fix else [])]

    @property
    def error(self) -> str:
        """Why it was not compared ('' when it was)."""
        if self.failed_step:
            return _FAILED_STEP_PREFIX[RunStep(self.failed_step)] + self.failure
        blocking = self.blocking
        if blocking and self.comparison is None:
            kinds = ", ".join(dict.fromkeys(problem_line(problem, with_source=False) for problem in blocking))
            return f"{len(blocking)} problem(s) keep the export from running in ONNX Runtime: {kinds}"
        return ""

    def failed(self, step: RunStep, message: str, hint: str = "") -> ExporterRun:
        """This run, stopped by ``step`` raising ``message``."""
        self.failed_step, self.failure, self.hint = step.value, message, hint
        return self

    def status(self) -> str:
        """``PASS``, ``FAIL`` or ``not compared``, as the report's table shows it."""
        if self.comparison is None:
            return "not compared"
        return "PASS" if self.comparison.passed else "FAIL"

    def to_json(self) -> dict[str, Any]:
        first = self.first_divergent
        return {"exporter": self.exporter, "opset": self.opset, "status": self.status(), "problems": self.problems,
                "fixes": self.fixes, "fixes_from": self.fixes_from, "left_unfixed": self.left_unfixed,
                "error": self.error, "hint": self.hint, "nodes_compared": self.nodes_compared,
                "first_divergent": None if first is None else first.to_json(),
                "comparison": None if self.comparison is None else self.comparison.to_json()}


@dataclass
class StepStarted:
    """A partial piece of the "run one exporter" job: ``step`` starts, after ``run`` so far."""

    step: str
    run: ExporterRun


@dataclass
class OutputAgreement:
    """One output of the two exports against each other (by position: each names it its own way)."""

    index: int
    names: dict[str, str]  # exporter -> the output's name in its export
    shape: tuple[int, ...]
    max_abs: float  # between the two exports
    max_rel: float
    within_tolerance: bool
    note: str = ""  # why it could not be compared (shapes differ, ...)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "names": self.names, "shape": list(self.shape),
                "max_abs": json_number(self.max_abs), "max_rel": json_number(self.max_rel),
                "within_tolerance": self.within_tolerance, "note": self.note}


@dataclass
class AlignedNode:
    """A value both exports make for the same op at the same source line in the same module scope."""

    scope: str
    source: str
    op: str  # the source op, as the first exporter's graph spells it
    onnx_nodes: dict[str, str]  # exporter -> the ONNX node whose output stands for the value
    onnx_kinds: dict[str, str]
    shape: tuple[int, ...]
    vs_torch: dict[str, float]  # exporter -> max abs against torch
    exceeds_torch: dict[str, bool]
    max_abs: float | None = None  # the two exports against each other; None when not compared
    differ: bool = False  # beyond tolerance from each other

    @property
    def place(self) -> str:
        """``aten::linear in lin at model.py:12``."""
        scope = f" in {self.scope}" if self.scope else ""
        source = f" at {self.source}" if self.source else ""
        return f"{self.op}{scope}{source}"

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "source": self.source, "op": self.op, "onnx_nodes": self.onnx_nodes,
                "onnx_kinds": self.onnx_kinds, "shape": list(self.shape),
                "vs_torch": {name: json_number(value) for name, value in self.vs_torch.items()},
                "exceeds_torch": self.exceeds_torch,
                "max_abs": None if self.max_abs is None else json_number(self.max_abs), "differ": self.differ}


@dataclass
class ExporterComparison:
    """Everything `compare --exporters` prints and Run ▸ Compare exporters shows (picklable)."""

    model_path: str
    exporters: list[str]
    runs: list[ExporterRun] = field(default_factory=list)  # one per exporter, in ``exporters``' order
    outputs: list[OutputAgreement] = field(default_factory=list)
    nodes: list[AlignedNode] = field(default_factory=list)  # in the first export's topological order
    unaligned: dict[str, int] = field(default_factory=dict)  # exporter -> compared values with no counterpart
    input_set: str = ""  # the input set the two were held to each other on
    held_to_each_other: bool = False  # the node-by-node pass ran (not with --no-node-analysis)
    messages: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def run_of(self, exporter: str) -> ExporterRun:
        return next(run for run in self.runs if run.exporter == exporter)

    @property
    def first_difference(self) -> AlignedNode | None:
        """The first aligned value where the two exports differ beyond tolerance."""
        return next((node for node in self.nodes if node.differ), None)

    @property
    def outputs_agree(self) -> bool:
        return bool(self.outputs) and all(output.within_tolerance for output in self.outputs)

    @property
    def agree(self) -> bool:
        """Both exported and compared, both within tolerance of torch, and of each other on every output."""
        return all(run.passed for run in self.runs) and (self.outputs_agree or not self.held_to_each_other)

    def verdict(self) -> str:
        """One sentence for the top of the report."""
        names = " and ".join(self.exporters)
        not_compared = [run.exporter for run in self.runs if not run.compared]
        if not_compared:
            return f"Not comparable: {', '.join(not_compared)} could not be compared with torch (see below)."
        first = self.first_difference
        if self.agree and not self.held_to_each_other:
            return f"Both the {names} exports match torch on every output (not compared with each other)."
        if self.agree:
            inside = "" if first is None else (
                f" Inside, {sum(node.differ for node in self.nodes)} value(s) differ from each other beyond "
                f"tolerance, first at {first.place}.")
            return f"The {names} exports agree: both match torch and each other on every output.{inside}"
        failing = [run.exporter for run in self.runs if not run.passed]
        parts = [f"{', '.join(failing)} does not match torch"] if failing else []
        if not self.outputs_agree:
            parts.append("the two exports' outputs differ from each other")
        where = f"; they first differ at {first.place}" if first else ""
        return f"The {names} exports disagree: {' and '.join(parts)}{where}."

    def to_json(self) -> dict[str, Any]:
        """The `compare --exporters --json` contract."""
        first = self.first_difference
        return {"model": self.model_path, "exporters": self.exporters, "agree": self.agree,
                "verdict": self.verdict(), "input_set": self.input_set, "held_to_each_other": self.held_to_each_other,
                "runs": [run.to_json() for run in self.runs],
                "outputs": [output.to_json() for output in self.outputs],
                "first_difference": None if first is None else first.to_json(),
                "nodes": [node.to_json() for node in self.nodes], "unaligned": self.unaligned,
                "messages": self.messages, "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def parse_exporters(text: str, known: tuple[str, ...]) -> list[str]:
    """``"torchscript,dynamo"`` -> the names, checked: two different known exporters."""
    names = [name.strip() for name in text.split(EXPORTER_SEPARATOR) if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"--exporters: unknown exporter {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(known)}.")
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"--exporters takes two different exporters, e.g. {EXPORTER_SEPARATOR.join(known)}.")
    return names
