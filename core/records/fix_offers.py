"""The new kinds of fix (issue 46) as the window offers them before Fix all: one record per fix.

A size the trace folds, a capture that stops on a value, a failure in torch.onnx's own pass and a
value the trace bakes are fixed by a code change, a graph rewrite, a generated Function or a capture
setting, not by an op template. The worker makes these offers from the same candidates `fix --auto`
tries (:mod:`fixport.core.fixing.fix_offers`); the Template dock lists them beside the templates,
shows what each changes, and applies one as Fix all applies it. No torch import.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fixport.core.project.project import FixMapping
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

# The problems these fixes are for: only their selection asks the worker for offers.
OFFERED_FOR = frozenset({ProblemReason.SHAPE_SPECIALISED, ProblemReason.BAKED_INPUT, ProblemReason.CAPTURE_FAILED,
                         ProblemReason.EXPORT_FAILED})
_HUNK = re.compile(r"^@@ -(\d+)")


@dataclass(frozen=True)
class FixOffer:
    """One fix for a problem: its one-line name, what it changes, and what Apply gives the project
    (a fix ``mapping``, or a capture ``setting`` added to the export options)."""

    name: str  # "Change model.py:20 while tracing, so the size stays traced"
    family: str  # the family Fix all names: traced_size_change, capture_code_change, capture_setting, ...
    why: str  # what it does, in the candidate's own words
    change: str  # a unified diff (code), the node and its rewrite (graph), the setting and what it does
    mapping: FixMapping | None = None
    setting: str = ""

    @property
    def offer_id(self) -> str:
        return f"setting.{self.setting}" if self.setting else self.mapping.template_id if self.mapping else ""

    @property
    def is_diff(self) -> bool:
        return self.change.startswith("--- ")


@dataclass(frozen=True)
class FixOffers:
    """The fix-offers job's answer: ``problem``'s offers, at ``opset`` under ``exporter``."""

    problem: UnsupportedNode
    opset: int
    exporter: str | None
    offers: list[FixOffer] = field(default_factory=list)

    def key(self) -> tuple:
        """What the offers depend on: the session keeps them by it."""
        return offers_key(self.problem, self.opset, self.exporter)


def offers_key(problem: UnsupportedNode, opset: int, exporter: str | None) -> tuple:
    return (exporter, opset, problem.instance, problem.kind, str(problem.reason), problem.source,
            problem.code_change_fix)


def diff_places(diff: str) -> list[str]:
    """'file.py:20' for each hunk of a unified diff: the first line it changes, as the file is now."""
    places, path, line, placed = [], "", 0, True
    for text in diff.splitlines():
        if text.startswith("--- "):
            path = text[4:].split(" (", 1)[0].strip()
        elif text.startswith("+++ "):
            continue
        elif (hunk := _HUNK.match(text)) is not None:
            line, placed = int(hunk.group(1)), False
        elif not placed and text[:1] in ("-", "+"):
            places.append(f"{path}:{line}")
            placed = True
        elif text[:1] != "+":
            line += 1
    return list(dict.fromkeys(places))
