"""After a round of `fix --auto`: the whole model, exported once with the round's node-level choices.

A choice the whole model contradicts (its kind still fails there, the numbers now differ from
torch, the export crashes the process or leaves the model with more or worse failing kinds) is
undone; its kind is tried again in the next round, on the whole model, one candidate at a time.
Also the small words the search and this check share: a problem's key, a rejection's record.
"""
from __future__ import annotations

from typing import Protocol

from fixport.core.checks.shape_check import baked_at
from fixport.core.exporters.base import NodeSamples
from fixport.core.fixing.isolation import TrialCrashed
from fixport.core.fixing.search_standing import describe, more_kinds_or_worse
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import Candidate
from fixport.core.records.fix_records import RejectedCandidate, TrialStage
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import AnalysisResult, AutoFixResult
from fixport.core.words.cancel import Cancelled, ProgressCallback, report
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

ProblemKey = tuple[str, str | None]
# What the trial's own check finds wrong in a model that runs: at the traced shapes, at another declared one,
# or at other values of an input the export does not follow.
WRONG_NUMBERS = (ProblemReason.MISMATCH, ProblemReason.SHAPE_SPECIALISED, ProblemReason.BAKED_INPUT)
REPLAY_WARNING = "ReplayConditionWarning"  # symbolics.synthesis.replay's, as the export notes it


class Search(Protocol):
    """What the check needs of the search (:class:`fixport.core.fixing.auto_fix.Search`)."""

    request: AutoFixRequest
    mappings: list[FixMapping]
    custom_node_kinds: set[ProblemKey]
    whole_model_only: set[ProblemKey]
    contradicted: set[tuple[ProblemKey, str]]
    samples: NodeSamples
    progress: ProgressCallback | None
    fraction: float

    def export(self, output: str | None = None, *, in_process: bool = False) -> AnalysisResult: ...


def problem_key(problem: UnsupportedNode) -> ProblemKey:
    """What one fix covers: an op kind, or one autograd.Function of prim::PythonOp."""
    return problem.kind, problem.python_op_name or None


def check_round(search: Search, chosen: list[tuple[UnsupportedNode, Candidate]], current: AnalysisResult,
                result: AutoFixResult, taken: set[ProblemKey]) -> AnalysisResult:
    """The whole model, once, with this round's node-level choices. The choices it contradicts
    (the kind still fails there, the numbers differ, the export crashes or leaves the model worse)
    are undone, to be tried on the whole model one at a time in the next round."""
    report(search.progress, search.fraction, "exporting the whole model with the fixes")
    output = search.request.output
    try:
        checked = search.export(output=output)
    except Cancelled:
        raise
    except Exception as error:  # noqa: BLE001 -- a crash (TrialCrashed), or a fix's own code raised
        contradicted = all_blamed(chosen, _export_failed(error))
    else:
        contradicted = contradicted_choices(chosen, checked, current)
        if not contradicted and more_kinds_or_worse(checked.unsupported, current.unsupported):
            contradicted = all_blamed(chosen, f"the whole model is worse with it: {describe(checked.unsupported)}, "
                                               f"against {describe(current.unsupported)}")
    if not contradicted:
        return checked
    undo_choices(contradicted, search, result, taken)
    try:
        return search.export(output=output)
    except Cancelled:
        raise
    except Exception as error:  # noqa: BLE001 -- the choices left fail together: none of this round's is kept
        kept = [(p, c) for p, c in chosen if c.mapping in search.mappings]
        undo_choices(all_blamed(kept, _export_failed(error)), search, result, taken)
        return current


def _export_failed(error: Exception) -> str:
    if isinstance(error, TrialCrashed):
        return f"the whole model's export crashed the process ({error.how})"
    first_line = str(error).splitlines()[0][:300] if str(error) else ""
    return f"the whole model's export failed: {type(error).__name__}: {first_line}"


def all_blamed(chosen: list[tuple[UnsupportedNode, Candidate]], why: str
               ) -> list[tuple[UnsupportedNode, Candidate, str, bool]]:
    """Each choice contradicted for ``why``; one alone is surely to blame (it is not tried again)."""
    return [(problem, candidate, why, len(chosen) == 1) for problem, candidate in chosen]


def contradicted_choices(chosen: list[tuple[UnsupportedNode, Candidate]], checked: AnalysisResult,
                         before: AnalysisResult) -> list[tuple[UnsupportedNode, Candidate, str, bool]]:
    """The node-level choices the whole model disagrees with, how, and whether that choice is
    surely to blame: the kind still fails there (yes), or the model's numbers now differ from torch
    (no one choice can be blamed: all of them are tried again)."""
    still = {problem_key(p): p for p in checked.unsupported}
    disagreed = []
    for problem, candidate in chosen:
        left = still.get(problem_key(problem))
        if left is not None and (candidate.runs_in_onnxruntime or left.reason != ProblemReason.RUNTIME_ERROR):
            why = (left.message or str(left.reason)).splitlines()[0][:300]
            why += what_the_replay_said(checked, problem.kind)
            disagreed.append((problem, candidate, why, True))
    wrong = [p for p in checked.unsupported if p.reason in WRONG_NUMBERS and not baked_at(p)]
    if len(wrong) > len([p for p in before.unsupported if p.reason in WRONG_NUMBERS and not baked_at(p)]):
        why = f"the whole model's numbers differ from torch with it: {wrong[0].message.splitlines()[0][:300]}"
        why += "".join(what_the_replay_said(checked, problem.kind) for problem, _ in chosen)
        named = {problem_key(problem) for problem, *_ in disagreed}
        disagreed += [(problem, candidate, why, False) for problem, candidate in chosen
                      if problem_key(problem) not in named]
    return disagreed


def rejected(candidate: Candidate, problem: UnsupportedNode, stage: TrialStage, reason: str) -> RejectedCandidate:
    return RejectedCandidate(candidate.mapping.template_id, candidate.family, problem.display_kind, stage, reason)


def what_the_replay_said(analysis: AnalysisResult, kind: str) -> str:
    """' (aten::median is replayed at the traced sizes: ...)': a replayed decomposition's own word on
    the sizes it holds for, when the export warned about ``kind``."""
    said = [text.split(": ", 1)[1] for text in analysis.warnings
            if text.startswith(REPLAY_WARNING) and ": " in text and f"{kind} is replayed" in text]
    return f" ({said[0]})" if said else ""


def undo_choices(contradicted: list[tuple[UnsupportedNode, Candidate, str, bool]], search: Search,
                 result: AutoFixResult, taken: set[ProblemKey]) -> None:
    """Undo node-level choices the whole model contradicts; their kinds are tried again, on the whole model."""
    for problem, candidate, why, to_blame in contradicted:
        key = problem_key(problem)
        search.mappings.remove(candidate.mapping)
        search.custom_node_kinds.discard(key)
        search.whole_model_only.add(key)
        if to_blame:  # not worth a whole-model trial
            search.contradicted.add((key, candidate.mapping.template_id))
        search.samples.undecided[problem.instance] = f"its fix passed on the node alone but not in the model ({why})"
        result.choices = [c for c in result.choices if (c.kind, c.python_op_name or None) != key]
        result.rejected.append(rejected(candidate, problem, TrialStage.CONTRADICTED, why))
        taken.discard(key)
