"""What `fix --auto` refused, as records: which candidate, for which op kind, at which stage, and why.

The worker fills :attr:`fixport.core.records.results.AutoFixResult.rejected` with these; the window
and the command line render them (:meth:`RejectedCandidate.line`) and select them by field, never
by searching the rendered text. No torch import: both front ends read them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class TrialStage(StrEnum):
    """Where a candidate was refused; the values are part of `fix --auto --json`'s output."""

    VALIDATION = "validation"  # it cannot work at the export's opset: refused before any trial
    ON_NODE = "on_node"  # tried on the failing node alone
    NODE_UNDECIDED = "node_undecided"  # the node alone left other ops to fix: kept for the whole model
    WHOLE_MODEL = "whole_model"  # tried by exporting the whole model (the node could not stand alone)
    WHOLE_MODEL_AFTER_NODE = "whole_model_after_node"  # undecided on the node, then refused by the whole model
    CONTRADICTED = "contradicted"  # passed on the node alone, refused once the whole model was exported
    CAPTURE_SETTING = "capture_setting"  # one of torch's capture settings, tried on the whole model


FAMILY_CAPTURE_SETTING = "capture_setting"  # the family of a rejected capture setting's record


@dataclass(frozen=True)
class RejectedCandidate:
    """One candidate `fix --auto` tried and did not keep.

    ``candidate`` is the fix's template id, or the capture setting's name; ``kind`` the op kind
    it was tried for as the user sees it (``prim::PythonOp[MyClip]``), '' for a capture setting
    (it applies to the whole capture); ``setting_description`` says what a capture setting does.
    """

    candidate: str
    family: str
    kind: str
    stage: TrialStage
    reason: str
    setting_description: str = ""

    def line(self) -> str:
        """The record in one sentence, as the Log and `fix --auto`'s report print it."""
        if self.stage == TrialStage.CAPTURE_SETTING:
            described = f" ({self.setting_description})" if self.setting_description else ""
            return f"capture setting {self.candidate}{described}: {self.reason}"
        where = {TrialStage.WHOLE_MODEL_AFTER_NODE: ", on the whole model"}.get(self.stage, "")
        why = {TrialStage.NODE_UNDECIDED: f"{self.reason}: tried on the whole model if nothing else works",
               TrialStage.CONTRADICTED: f"passed on the node alone, but {self.reason}"}.get(self.stage, self.reason)
        return f"{self.candidate} ({self.family}) for {self.kind}{where}: {why}"

    def to_json(self) -> dict[str, Any]:
        """The record's fields, and its sentence under ``line``."""
        return {**asdict(self), "stage": str(self.stage), "line": self.line()}


def last_rejection_for(kind: str, rejected: list[RejectedCandidate]) -> RejectedCandidate | None:
    """The last candidate refused for op kind ``kind`` (what the search tried last), or None."""
    return next((r for r in reversed(rejected) if r.kind == kind), None)
