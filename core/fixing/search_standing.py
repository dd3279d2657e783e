"""How bad a model's problems are, in one place: what `fix --auto` compares states and candidates by.

Each :class:`ProblemReason` has a severity (:data:`SEVERITY`): a model that does not export at
all is worse than one with a node that does not convert, which is worse than one ONNX Runtime
cannot run, which is worse than one whose numbers differ from torch. A state's :func:`harm` counts
its problems per severity, most severe first: the distinct op kinds, then the nodes. States are
compared by it lexicographically (:func:`is_worse`): one more kind failing to convert outweighs any
number of mismatches fixed; at equal kinds, more failing nodes is worse.

A candidate is judged on the kinds alone (:func:`more_kinds_at_worse_severity`): a fix that
replaces one failing op by several nodes of one other op the next round fixes is allowed its
round. The search's end compares the full :func:`harm` of what it has against the best state it
saw, and keeps the best (:class:`BestState`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import AutoFixChoice
from fixport.core.records.results import AnalysisResult
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

SEVERITY: dict[ProblemReason, int] = {
    # the model does not export at all
    ProblemReason.CAPTURE_FAILED: 5,
    ProblemReason.EXPORT_FAILED: 5,
    ProblemReason.WORKER_CRASH: 5,
    # a node does not convert
    ProblemReason.NO_SYMBOLIC: 4,
    ProblemReason.SYMBOLIC_REJECTED: 4,
    ProblemReason.PYTHON_OP: 4,
    ProblemReason.CUSTOM_OP: 4,
    ProblemReason.NO_ONNX_FUNCTION: 4,
    ProblemReason.TRANSLATION_FAILED: 4,
    # it converts, ONNX Runtime cannot run it
    ProblemReason.RUNTIME_ERROR: 3,
    # it runs, with wrong numbers (at the traced sizes, at others, at other input values)
    ProblemReason.MISMATCH: 2,
    ProblemReason.SHAPE_SPECIALISED: 2,
    ProblemReason.BAKED_INPUT: 2,
    # torch's own output is random: the model's nature, no fix changes it
    ProblemReason.RANDOM_OUTPUT: 1,
}
LEVELS = sorted(set(SEVERITY.values()), reverse=True)
UNKNOWN_SEVERITY = 4  # a reason added later and not placed here: as bad as a node that does not convert

Harm = tuple[tuple[int, int], ...]  # (kinds, nodes) per severity, most severe first


def _kinds_and_nodes(problems: Iterable[UnsupportedNode], level: int) -> tuple[int, int]:
    at_level = [p for p in problems if SEVERITY.get(p.reason, UNKNOWN_SEVERITY) == level]
    return len({p.display_kind for p in at_level}), len(at_level)


def harm(problems: Iterable[UnsupportedNode]) -> Harm:
    """The problems per severity, most severe first: (distinct kinds, nodes)."""
    problems = list(problems)
    return tuple(_kinds_and_nodes(problems, level) for level in LEVELS)


def is_worse(analysis: AnalysisResult, than: AnalysisResult) -> bool:
    """Whether ``analysis`` has more problems, or worse ones, than ``than``."""
    return harm(analysis.unsupported) > harm(than.unsupported)


def more_kinds_or_worse(trial: Iterable[UnsupportedNode], current: Iterable[UnsupportedNode]) -> bool:
    """The judge's test for a candidate: more failing kinds, or worse ones, than before it."""
    return tuple(kinds for kinds, _ in harm(trial)) > tuple(kinds for kinds, _ in harm(current))


def describe(problems: Iterable[UnsupportedNode]) -> str:
    """'26 problem(s): prims::cat.default [no_onnx_function] x26' for a report line."""
    problems = list(problems)
    counts: dict[str, int] = {}
    for problem in problems:
        label = f"{problem.display_kind} [{problem.reason}]"
        counts[label] = counts.get(label, 0) + 1
    listed = ", ".join(f"{label} x{count}" if count > 1 else label for label, count in list(counts.items())[:4])
    more = ", ..." if len(counts) > 4 else ""
    return f"{len(problems)} problem(s)" + (f": {listed}{more}" if listed else "")


@dataclass
class BestState:
    """The least harmful state the search has verified on the whole model, with what makes it."""

    analysis: AnalysisResult
    mappings: list[FixMapping]
    overrides: dict[str, Any]  # the export options the search ran with (opset raised, capture settings)
    choices: list[AutoFixChoice] = field(default_factory=list)
    opset_raised: tuple[int, int] | None = None
    capture_settings: list[str] = field(default_factory=list)

    def offer(self, other: BestState) -> BestState:
        """``other`` when it is no worse than this one (later states win ties: they fixed more)."""
        return self if is_worse(other.analysis, self.analysis) else other
