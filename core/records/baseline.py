"""The plain-torch baseline: what ``torch.onnx.export`` alone makes of the same call (no torch import).

Fixport must never do worse than torch: a model the plain export gets right, at every input set
Fixport's check used, is one Fixport must not flag, get wrong or fail to export. The baseline job
(``core/analysis/baseline.py``) fills a :class:`BaselineResult`; :func:`fixport_worse` says whether
Fixport's own outcome is worse, and why.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from fixport.core.words.vocabulary import ProblemReason

PLAIN_EXPORT = "plain torch.onnx.export"
WORSE_PREFIX = f"Fixport is worse than {PLAIN_EXPORT} here: "
# Problems the baseline does not look for (it runs the plain export at the same sizes, not at other
# values of the inputs): a plain export that bakes an input too would be called right.
BASELINE_UNSEEN_REASONS = frozenset({ProblemReason.BAKED_INPUT})
# Problems of a model Fixport did export (the others leave it without one: missing)
EXPORTED_BUT_WRONG_REASONS = frozenset({ProblemReason.MISMATCH, ProblemReason.SHAPE_SPECIALISED,
                                        ProblemReason.BAKED_INPUT, ProblemReason.RANDOM_OUTPUT,
                                        ProblemReason.RUNTIME_ERROR})


class BaselineVerdict(StrEnum):
    """The plain export's verdict; the values are part of the JSON formats."""

    RIGHT = "right"  # exported, ran in ONNX Runtime and matched torch at every input set
    WRONG = "wrong"  # exported and ran, but differs from torch (or ONNX Runtime fails) at some input set
    FAILED = "failed"  # torch.onnx.export raised, or ONNX Runtime cannot load or run it on the example inputs


@dataclass
class BaselineSet:
    """The plain export at one input set: the example inputs, or another size or set Fixport checked."""

    label: str  # "example inputs", "set 2", "batch=3, len=12"
    passed: bool
    max_abs: float | None = None  # over every output (None: ONNX Runtime did not run there)
    error: str = ""  # ONNX Runtime's first line, or the outputs beyond tolerance


@dataclass
class BaselineResult:
    """``torch.onnx.export`` with the same arguments, no Fixport patches, fixes, capture settings or
    passes, run in ONNX Runtime (CPU) and compared with torch at the same input sets."""

    exporter: str
    opset: int
    exported: bool = False
    export_error: str = ""  # the exporter's first line
    ran: bool = False  # ONNX Runtime loaded it and ran it on the example inputs
    runtime_error: str = ""
    sets: list[BaselineSet] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)  # input sets torch itself refuses
    seconds: float = 0.0

    @property
    def verdict(self) -> BaselineVerdict:
        if not self.exported or not self.ran:
            return BaselineVerdict.FAILED
        return BaselineVerdict.RIGHT if all(s.passed for s in self.sets) else BaselineVerdict.WRONG

    @property
    def right(self) -> bool:
        return self.verdict == BaselineVerdict.RIGHT

    def line(self) -> str:
        """One line for a report: where it is right, or where it fails and why."""
        if not self.exported:
            return f"{PLAIN_EXPORT}: fails: torch.onnx.export raised: {self.export_error}"
        if not self.ran:
            return f"{PLAIN_EXPORT}: fails: ONNX Runtime cannot run it: {self.runtime_error}"
        if self.right:
            worst = max((s.max_abs for s in self.sets if s.max_abs is not None), default=0.0)
            return f"{PLAIN_EXPORT}: right at {len(self.sets)} size(s) (largest error {worst:.2e})"
        failing = [s for s in self.sets if not s.passed]
        where = "; ".join(f"{s.label}: {s.error}" for s in failing)
        return (f"{PLAIN_EXPORT}: right at {len(self.sets) - len(failing)} size(s) / fails: {where}")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BaselineResult:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["sets"] = [BaselineSet(**s) for s in known.get("sets", [])]
        return cls(**known)


def fixport_worse(baseline: BaselineResult | None, fixport_ok: bool, problems: Sequence[tuple[str, str]] = (),
                  outcome: str = "Fixport's export differs from torch") -> str:
    """Why Fixport is worse than the plain export ('' when it is not): the plain export is right
    and Fixport's is wrong, flagged, or missing. ``problems``: (kind, reason) of each problem
    Fixport reports (those of kinds the baseline does not look for do not count); ``outcome``:
    what Fixport did where it reports none."""
    if baseline is None or not baseline.right or fixport_ok:
        return ""
    counted = [(kind, reason) for kind, reason in problems if reason not in BASELINE_UNSEEN_REASONS]
    if problems and not counted:
        return ""
    sizes = f"the plain export is right at {len(baseline.sets)} size(s)"
    if not counted:
        return f"{WORSE_PREFIX}{sizes}, and {outcome.rstrip('.')}."
    named = ", ".join(dict.fromkeys(f"{kind} [{reason}]" for kind, reason in counted))
    if any(reason not in EXPORTED_BUT_WRONG_REASONS for _, reason in counted):
        return f"{WORSE_PREFIX}{sizes}, and Fixport could not export the model: {named}."
    return f"{WORSE_PREFIX}{sizes}, and Fixport's export is flagged: {named}."
