"""torch's capture settings as candidates of `fix --auto` (``core.project.capture_settings``).

When a round of templates fixed nothing and what is left is the capture's, torch.onnx's own
passes' or an op's translation, each setting the exporter's profile offers that may cure it
(``TRIED_FOR``) is tried on top of those already chosen: a whole-model trial export, in a forked
copy of the worker like any other trial. It is kept when every problem it was tried for is gone,
no more such problems are left than before, and the trial's own check finds no more wrong numbers.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from fixport.core.analysis.analysis import analyze_in
from fixport.core.analysis.job_context import JobContext
from fixport.core.exporters.profiles import ExporterProfile
from fixport.core.fixing.isolation import TrialCrashed, run_isolated
from fixport.core.foundation.errors import FixportError
from fixport.core.project.capture_settings import (
    DECIDED_AT_CAPTURE,
    SETTING_REASONS,
    SIZE_SCALARS,
    describe_setting,
    may_cure,
)
from fixport.core.records.fix_records import FAMILY_CAPTURE_SETTING, RejectedCandidate, TrialStage
from fixport.core.records.results import AnalysisResult
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

# At the traced shapes, at another declared one, or at other values: a setting that decides at the
# capture what the code leaves to values (draft_export) holds for the example's values only.
_WRONG_NUMBERS = (ProblemReason.MISMATCH, ProblemReason.SHAPE_SPECIALISED, ProblemReason.BAKED_INPUT)


@dataclass
class SettingTrials:
    """The capture settings one `fix --auto` run tried, and those it keeps."""

    profile: ExporterProfile
    chosen: list[str] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    trials: int = 0

    def first_working(self, context: JobContext, current: AnalysisResult,
                      can_fix: Callable[[UnsupportedNode], bool], rejected: list[RejectedCandidate],
                      report: Callable[[str], None] = lambda _message: None,
                      other_shapes: list[dict[str, tuple[int, ...]]] | None = None) -> AnalysisResult | None:
        """The trial analysis of ``context`` (the search's model, options and fixes so far; checked
        at ``other_shapes`` too) with the first setting not tried yet that fixes what the settings
        can fix in ``current`` (None when none does); ``can_fix``: whether a template can fix a
        problem; why each setting that did not work failed goes to ``rejected``."""
        for setting in [s for s in self.profile.capture_settings if s not in self.tried]:
            targets = [p for p in current.unsupported if may_cure(setting, p)]
            if not targets:
                continue
            self.tried.add(setting)
            self.trials += 1
            report(f"trying the capture setting {setting} on the whole model")
            trial_context = context.with_overrides({**context.overrides, "capture_settings": [*self.chosen, setting]})
            trial_request = trial_context.analyze_request(other_shapes=list(other_shapes or []))
            try:
                trial = run_isolated(partial(analyze_in, trial_context, trial_request),
                                     waiting=lambda seconds, tried=setting: report(
                                         f"still trying the capture setting {tried} ({seconds:.0f} s)"))
            except (TrialCrashed, FixportError) as error:
                rejected.append(_rejected_setting(setting, f"the export failed: {error}"))
                continue
            except Exception as error:  # torch itself, under a setting it does not often run with
                rejected.append(_rejected_setting(setting, f"the export failed: {type(error).__name__}: {error}"))
                continue
            why_not = _why_not_kept(trial, current, targets, can_fix, setting)
            if why_not:
                rejected.append(_rejected_setting(setting, why_not, describe_setting(setting)))
                continue
            self.chosen.append(setting)
            return trial
        return None


def _rejected_setting(setting: str, reason: str, description: str = "") -> RejectedCandidate:
    return RejectedCandidate(setting, FAMILY_CAPTURE_SETTING, "", TrialStage.CAPTURE_SETTING, reason, description)


def _key(problem: UnsupportedNode) -> tuple[str, str, str]:
    return problem.kind, str(problem.reason), problem.source


def _why_not_kept(trial: AnalysisResult, current: AnalysisResult, targets: list[UnsupportedNode],
                  can_fix: Callable[[UnsupportedNode], bool], setting: str = "") -> str:
    """'' when the trial is better than ``current``; else why not. Problems a template can fix
    (ops a capture that now works reaches) are the next round's."""
    left = {_key(p) for p in trial.unsupported}
    still = [p for p in targets if _key(p) in left]
    if still:
        return f"{still[0].display_kind} still fails: {_first_line(still[0])}"
    failing = [p for p in trial.unsupported if p.reason == ProblemReason.CAPTURE_FAILED and not can_fix(p)]
    if setting == SIZE_SCALARS and failing:  # its one job is the capture (a failure may be said at another line now)
        return f"the capture still fails: {_first_line(failing[0])}"
    after = [p for p in trial.unsupported if p.reason in SETTING_REASONS and not can_fix(p)]
    if setting in DECIDED_AT_CAPTURE and after:  # the capture failures say more than a pass failing on its graph
        return f"it captures, but the export then fails: {_first_line(after[0])}"
    stuck = [p for p in trial.unsupported if p.reason in SETTING_REASONS and not can_fix(p)]
    if len(stuck) > len([p for p in current.unsupported if p.reason in SETTING_REASONS and not can_fix(p)]):
        return f"it fails elsewhere instead: {_first_line(stuck[0])}"
    # a size the capture pinned, with the code change at the line that pinned it: every size it got
    # wrong is that change's to answer, in the next round
    pinned_with_change = any(p.reason == ProblemReason.SHAPE_SPECIALISED and can_fix(p) for p in trial.unsupported)
    wrong = [p for p in trial.unsupported if p.reason in _WRONG_NUMBERS and not can_fix(p)
             and not (pinned_with_change and p.reason == ProblemReason.SHAPE_SPECIALISED)]
    if len(wrong) > len([p for p in current.unsupported if p.reason in _WRONG_NUMBERS and not can_fix(p)]):
        return f"the numbers differ from torch with it: {_first_line(wrong[0])}"
    return ""


def _first_line(problem: UnsupportedNode) -> str:
    return (problem.message or str(problem.reason)).splitlines()[0][:200]
