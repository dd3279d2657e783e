"""`fix --auto`: one search over the :class:`~fixport.core.exporters.base.Exporter` protocol,
whichever exporter the options name.

For each unsupported op kind the exporter's candidates (``Exporter.fix_candidates``, in the
order of the one list of strategies, ``core.records.fix_strategies``) are tried and the first is
kept whose trial export leaves the node supported, runs in plain ONNX Runtime and, once nothing
else is left, matches torch: the trial's own
analysis says so (its check runs the model once and compares every output by dtype), so a
candidate is checked once and no file is written to check it. Each trial export runs in a forked
copy of the worker (:mod:`fixport.core.fixing.isolation`): a candidate that crashes torch is
skipped. A custom-domain node is a candidate only with ``keep_opset`` or, once nothing else
works, for an op of the user's own namespace (a ``torch.library`` op); its choice says ONNX
Runtime cannot run it. The opset is raised only when nothing works at the one asked.

Candidates are tried on the failing node alone (:mod:`fixport.core.fixing.node_trials`): the
node, cut out of the traced model with the values it saw, is exported with the candidate, run in
ONNX Runtime and compared with torch, so a trial costs milliseconds whatever the model's size.
Once a round has settled every kind it can, the whole model is exported and checked once; a kind
whose node-level choice the whole model contradicts (the node still fails there, or the model's
numbers now differ) is tried again on the whole model, as is a kind whose node cannot stand
alone (the exporter says why, and the result lists it in ``whole_model_why``). A candidate that
replaces the node by ops of which one fails in turn (an inlined implementation using an op whose
ONNX function fails) cannot be decided on the node: when no candidate works there, the first
such ones are tried on the whole model, where the next round fixes what they leave.

The model is opened, its options resolved and its exporter chosen once per search
(:class:`~fixport.core.analysis.job_context.JobContext`); every export and trial export of the
search takes that context, with the fixes of the moment. The search exports the whole model
itself only where it must: once at the start unless the caller passes the analysis it holds
(the window does), once after each round of fixes (writing the file asked for when nothing is
left), and once after raising the opset.
``AutoFixResult.whole_model_exports`` counts them.

When a round fixes nothing and what is left is the capture's or torch.onnx's own (a capture
failure, a failing pass, an op no template fixed), torch's capture settings the exporter offers
(grad mode, strict capture, the decomposition table: :mod:`capture_setting_trials`) are tried on
the whole model, before the opset is raised; a setting kept is an export option from then on.

Where the export declares dynamic axes, the trial's check also runs the model at other sizes of
those dims (:mod:`fixport.core.checks.shape_check`): a fix that folds the traced sizes into
constants is refused like one that computes wrong numbers, and the next candidate is tried.

The search does no harm. A candidate whose trial leaves more failing kinds, or worse ones
(:mod:`search_standing` orders them), is refused, as is one whose trial raises; the search keeps
the best state it verified on the whole model (its analysis, mappings and options) and returns
that one when it ends worse, writing the file asked for with its fixes. Every export of the whole
model runs forked like the trials, so a fix that crashes the process is that candidate's
rejection (:mod:`round_check` undoes a round's choices the whole model refuses). While a trial
runs, the search says every few seconds what it is still trying; with
``AutoFixRequest.time_limit_s`` it stops at the limit, verifies what the nodes chose so far, and
lists the kinds it did not get to in ``AutoFixResult.not_reached``.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from fixport.core.analysis.analysis import analyze_in
from fixport.core.analysis.job_context import JobContext, open_job
from fixport.core.checks.shape_check import baked_at
from fixport.core.exporters.base import Exporter, NodeSample, NodeSamples
from fixport.core.fixing.capture_setting_trials import SettingTrials
from fixport.core.fixing.fix_costs import time_both_exports
from fixport.core.fixing.heartbeat import reporting_while
from fixport.core.fixing.isolation import TrialCrashed, TrialStopped, run_isolated
from fixport.core.fixing.node_trials import OtherOpsLeft, verdict_on_node
from fixport.core.fixing.round_check import (
    WRONG_NUMBERS,
    ProblemKey,
    check_round,
    problem_key,
    rejected,
    what_the_replay_said,
)
from fixport.core.fixing.search_standing import BestState, describe, is_worse, more_kinds_or_worse
from fixport.core.foundation.errors import FixportError
from fixport.core.loaders.loading import LoadedModel
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import FAMILY_GENERIC, MAX_AUTO_FIX_ROUNDS, Candidate
from fixport.core.records.fix_records import RejectedCandidate, TrialStage
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import AnalysisResult, AutoFixResult
from fixport.core.words.cancel import CancelCallback, Cancelled, ProgressCallback, check_cancelled, report
from fixport.core.words.errors import TemplateValidationError
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import IN_THE_MODELS_CODE_REASONS, ProblemReason, users_own_op
from fixport.symbolics.library import TemplateLibrary
from fixport.symbolics.torchlib_bridge import load_torchlib

MAX_UNDECIDED_ON_WHOLE_MODEL = 2  # whole-model trials for candidates the node could not decide

Trial = TypeVar("Trial")


class OutOfTime(Exception):
    """The search's time limit passed: it stops where it is and returns the best state it verified."""


@dataclass
class Search:
    """One `fix --auto` run: the job's context (model, options, exporter), the mappings so far, what was tried."""

    request: AutoFixRequest
    context: JobContext  # built once; its options change when the search raises the opset or keeps a capture setting
    library: TemplateLibrary
    cancelled: CancelCallback | None
    mappings: list[FixMapping] = field(default_factory=list)
    custom_node_kinds: set[ProblemKey] = field(default_factory=set)  # fixes ORT cannot run, chosen on request
    whole_model_exports: int = 0
    samples: NodeSamples = field(default_factory=NodeSamples)
    whole_model_only: set[ProblemKey] = field(default_factory=set)  # kinds whose node cannot decide
    contradicted: set[tuple[ProblemKey, str]] = field(default_factory=set)  # (kind, template) the model refused
    node_trials: int = 0
    whole_model_trials: int = 0
    progress: ProgressCallback | None = None
    fraction: float = 0.0  # how far the search is, for its progress reports
    deadline: float | None = None  # time.monotonic() at which the time limit stops the search

    def check_time(self) -> None:
        """Raise OutOfTime once the time limit has passed (between trials)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise OutOfTime()

    def isolated(self, function: Callable[[], Trial], doing: str, *, limited: bool = True) -> Trial:
        """``function()`` in a forked child (:func:`run_isolated`), saying every few seconds what it
        is still doing; ``limited``: the time limit stops it (OutOfTime)."""
        def waiting(seconds: float) -> None:
            report(self.progress, self.fraction, f"still {doing} ({seconds:.0f} s)")
        try:
            return run_isolated(function, waiting=waiting, cancelled=self.cancelled,
                                deadline=self.deadline if limited else None)
        except TrialStopped as stopped:
            raise OutOfTime() from stopped

    @property
    def exporter(self) -> Exporter:
        return self.context.exporter

    @property
    def loaded(self) -> LoadedModel:
        return self.context.loaded

    @property
    def options(self) -> dict[str, Any]:
        """The export options the search runs with, as the caller gives them (not resolved)."""
        return self.context.overrides

    def set_options(self, **changes: Any) -> None:
        """Export with these options from now on (an opset raised, the capture settings kept)."""
        self.context = self.context.with_overrides({**self.context.overrides, **changes})

    def with_fixes(self, mappings: list[FixMapping]) -> JobContext:
        return self.context.with_fixes(mappings)

    def export(self, output: str | None = None, *, in_process: bool = False) -> AnalysisResult:
        """The whole model with the mappings so far, in a forked child: a fix that crashes the
        exporter raises TrialCrashed here, and the search goes on. The time limit does not stop it
        (the search needs the state it verifies). ``in_process``: the model as it came, before any
        fix of this search (it also warms this process for the trials forked from it)."""
        check_cancelled(self.cancelled)
        self.whole_model_exports += 1
        fixed = len(self.mappings) > len(self.request.mappings)  # this search chose a fix (the window's first export)
        stage = "exporting the whole model with the fixes" if fixed else "exporting as it is"
        report(self.progress, self.fraction, stage)
        context = self.with_fixes(self.mappings)
        request = context.analyze_request(output, other_shapes=self.request.other_shapes)
        if in_process:
            def stages(_fraction: float, message: str = "") -> None:  # the export's own stages, named under this one
                report(self.progress, self.fraction, f"{stage}: {message}" if message else stage)
            analysis = analyze_in(context, request, progress=stages, cancelled=self.cancelled)
        else:
            analysis = self.isolated(lambda: analyze_in(context, request), stage, limited=False)
        check_cancelled(self.cancelled)
        return analysis

    def take_samples(self, problems: list[UnsupportedNode], options: ExportOptions) -> None:
        """Cut the failing nodes of ``problems`` not sampled yet out of the model (one trace)."""
        new = [p for p in problems if p.instance not in self.samples.samples
               and p.instance not in self.samples.undecided and problem_key(p) not in self.whole_model_only]
        if not new:
            return
        capturing = "capturing the values that flow into the failing nodes"
        # the fixes as the problems were found
        with reporting_while(self.progress, self.fraction, capturing), \
                self.exporter.fixes_applied(list(self.mappings), options) as custom_opsets:
            sampled = replace(options, custom_opsets={**custom_opsets, **options.custom_opsets})
            taken = self.exporter.node_samples(self.loaded, sampled, new, self.cancelled)
        self.samples.samples.update(taken.samples)
        self.samples.undecided.update(taken.undecided)

    def first_working(self, problem: UnsupportedNode, current: AnalysisResult, result: AutoFixResult,
                      allow_custom: bool) -> tuple[Candidate, AnalysisResult | None, float | None] | None:
        """The first candidate for ``problem`` that works, the trial's analysis (None when it was
        tried on the node alone) and its max error. Candidates the node alone cannot decide (they
        leave other ops to fix) are tried on the whole model, only when no other works."""
        opset = current.options.opset
        sample = self.sample_for(problem)
        candidates = [c for c in self.exporter.fix_candidates(problem, opset, self.library, allow_custom, sample)
                      if (problem_key(problem), c.mapping.template_id) not in self.contradicted]
        on_node = sample is not None
        undecided: list[Candidate] = []
        for number, candidate in enumerate(candidates, 1):
            if undecided and not candidate.runs_in_onnxruntime:  # a fix ONNX Runtime runs comes first
                found = self._first_on_whole_model(undecided, problem, current, result)
                if found is not None:
                    return found
                undecided = []
            self.check_time()
            where = "on the node" if on_node else "on the whole model"
            report(self.progress, self.fraction,
                   f"{problem.display_kind}: trial {number} of {len(candidates)} ({where})")
            outcome = self.try_candidate(candidate, problem, current)
            if isinstance(outcome, OtherOpsLeft):
                undecided.append(candidate)
                outcome = rejected(candidate, problem, TrialStage.NODE_UNDECIDED, str(outcome))
            if isinstance(outcome, RejectedCandidate):
                result.rejected.append(outcome)
                continue
            return candidate, *outcome
        return self._first_on_whole_model(undecided, problem, current, result)

    def _first_on_whole_model(self, undecided: list[Candidate], problem: UnsupportedNode, current: AnalysisResult,
                              result: AutoFixResult) -> tuple[Candidate, AnalysisResult, float | None] | None:
        """The first of the candidates the node could not decide that works on the whole model."""
        for candidate in undecided[:MAX_UNDECIDED_ON_WHOLE_MODEL]:
            self.check_time()
            report(self.progress, self.fraction, f"{problem.display_kind}: {candidate.mapping.template_id} "
                   "on the whole model (the node alone left other ops to fix)")
            outcome = self.try_on_whole_model(candidate, problem, current)
            if isinstance(outcome, RejectedCandidate):
                result.rejected.append(replace(outcome, stage=TrialStage.WHOLE_MODEL_AFTER_NODE))
                continue
            return candidate, *outcome
        return None

    def sample_for(self, problem: UnsupportedNode) -> NodeSample | None:
        return None if problem_key(problem) in self.whole_model_only else self.samples.sample_for(problem)

    def try_candidate(self, candidate: Candidate, problem: UnsupportedNode, current: AnalysisResult
                      ) -> RejectedCandidate | OtherOpsLeft | tuple[AnalysisResult | None, float | None]:
        """The candidate on the node alone where it can stand alone, else the whole model's trial
        export judged by its own analysis; a record says why the candidate failed."""
        try:
            self.exporter.validate_fix(candidate.mapping, current.options.opset)
        except TemplateValidationError as error:
            return rejected(candidate, problem, TrialStage.VALIDATION, error.message)
        check_cancelled(self.cancelled)
        sample = self.sample_for(problem)
        if sample is not None:
            self.node_trials += 1
            loaded, options, mappings = self.loaded, current.options, list(self.mappings)
            try:
                doing = f"trying {candidate.mapping.template_id} for {problem.display_kind} on the node"
                verdict = self.isolated(lambda: verdict_on_node(self.exporter, loaded, sample, candidate, mappings,
                                                                options), doing)
            except TrialCrashed as error:
                verdict = str(error)
            except (Cancelled, OutOfTime):
                raise
            except Exception as error:  # a fix's own code can raise anything while it is registered or run
                verdict = f"the export of the node failed: {type(error).__name__}: {error}"
            if isinstance(verdict, str):
                return rejected(candidate, problem, TrialStage.ON_NODE, verdict)
            return verdict if isinstance(verdict, OtherOpsLeft) else (None, verdict)
        return self.try_on_whole_model(candidate, problem, current)

    def try_on_whole_model(self, candidate: Candidate, problem: UnsupportedNode, current: AnalysisResult
                           ) -> RejectedCandidate | tuple[AnalysisResult, float | None]:
        """The whole model's trial export with the candidate, judged by its own analysis."""
        self.whole_model_trials += 1
        context = self.with_fixes([*self.mappings, candidate.mapping])
        trial_request = context.analyze_request(other_shapes=self.request.other_shapes)
        try:
            doing = f"trying {candidate.mapping.template_id} for {problem.display_kind} on the whole model"
            trial = self.isolated(lambda: analyze_in(context, trial_request), doing)
        except TrialCrashed as error:
            return rejected(candidate, problem, TrialStage.WHOLE_MODEL, str(error))
        except (Cancelled, OutOfTime):
            raise
        except FixportError as error:
            return rejected(candidate, problem, TrialStage.WHOLE_MODEL, f"the export failed: {error}")
        except Exception as error:  # a fix's own code can raise anything while the exporter registers it
            return rejected(candidate, problem, TrialStage.WHOLE_MODEL,
                            f"the export failed: {type(error).__name__}: {error}")
        judged = self._judge(trial, candidate, problem, current)
        return rejected(candidate, problem, TrialStage.WHOLE_MODEL, judged) if isinstance(judged, str) else judged

    def _judge(self, trial: AnalysisResult, candidate: Candidate, problem: UnsupportedNode,
               current: AnalysisResult) -> str | tuple[AnalysisResult, float | None]:
        key = problem_key(problem)
        left = [p for p in trial.unsupported if problem_key(p) == key
                and (candidate.runs_in_onnxruntime or p.reason != ProblemReason.RUNTIME_ERROR)]
        if left:
            why = left[0].message.splitlines()[0][:300] if left[0].message else str(left[0].reason)
            return why + what_the_replay_said(trial, problem.kind)
        expected = {*self.custom_node_kinds, *(() if candidate.runs_in_onnxruntime else (key,))}
        counted = [p for p in trial.unsupported  # a custom-domain node ORT cannot run was chosen for that
                   if not (p.reason == ProblemReason.RUNTIME_ERROR and problem_key(p) in expected)]
        if more_kinds_or_worse(counted, current.unsupported):
            return (f"it leaves the model worse than before: {describe(counted)}, against "
                    f"{describe(current.unsupported)}")
        refused = [p for p in trial.unsupported if p.reason == ProblemReason.RUNTIME_ERROR
                   and problem_key(p) not in self.custom_node_kinds and problem_key(p) != key]
        if refused and not all(p.kind.startswith("aten::") for p in refused):
            # ONNX Runtime runs a model only when everything converts: this fix broke it
            return f"ONNX Runtime cannot run the result: {refused[0].message.splitlines()[0][:300]}"
        # Sizes the model's own code baked (the trace warned at its line) show once the model runs at
        # all: they are the model's, listed in the end, not this candidate's doing.
        wrong = [p for p in trial.unsupported if p.reason in WRONG_NUMBERS and not baked_at(p)]
        if len(wrong) > len([p for p in current.unsupported if p.reason in WRONG_NUMBERS and not baked_at(p)]):
            # the trial's own check: numbers differ (at some shape)
            return wrong[0].message.splitlines()[0][:300] + what_the_replay_said(trial, problem.kind)
        if candidate.family == FAMILY_GENERIC and trial.unsupported:
            return "a generic template is kept only when the whole model can be compared with torch"
        # Other problems left (or ORT, running for the first time, refused another aten op: fixed
        # next round): the whole model is compared once they are fixed.
        return trial, trial.output_max_abs if not trial.unsupported and candidate.runs_in_onnxruntime else None


def auto_fix(request: AutoFixRequest, progress: ProgressCallback | None = None,
             cancelled: CancelCallback | None = None) -> AutoFixResult:
    """Fix every unsupported node with the first candidate that works (see the module docstring),
    re-exporting until nothing is left (a fix can reveal problems behind it). The result is never
    worse than the model was (:mod:`search_standing`): the best state verified is kept."""
    report(progress, 0.0, "loading the model")
    started_with = open_job(request.model, request.options, request.mappings)
    exporter = started_with.exporter
    deadline = None if request.time_limit_s is None else time.monotonic() + request.time_limit_s
    search = Search(request, started_with, exporter.profile.template_library(), cancelled, list(request.mappings),
                    progress=progress, deadline=deadline)
    before = request.analysis
    if before is None:
        report(progress, 0.0, "exporting as it is")
        before = search.export(in_process=True)
    load_torchlib()  # what the fixes' trials share, loaded once here rather than in each forked trial
    result = AutoFixResult(before, before, list(search.mappings))
    settings = SettingTrials(exporter.profile, list(before.options.capture_settings))
    saved = False
    taken = {(m.target_kind, m.python_op_name) for m in search.mappings}
    current = before
    best = _state(search, current, result, settings)
    last_resort = False  # custom-domain nodes for the user's own ops, once nothing else works
    try:
        for round_index in range(MAX_AUTO_FIX_ROUNDS):
            best = best.offer(_state(search, current, result, settings))
            if not current.unsupported:
                break
            pending = _pending(current, taken, exporter)
            search.fraction = round_index / (MAX_AUTO_FIX_ROUNDS + 1)
            search.check_time()
            search.take_samples(pending, current.options)
            fixed_any = False
            chosen_on_node: list[tuple[UnsupportedNode, Candidate]] = []
            try:
                for index, problem in enumerate(pending):
                    search.check_time()
                    search.fraction = (round_index + index / len(pending)) / (MAX_AUTO_FIX_ROUNDS + 1)
                    report(progress, search.fraction, f"trying fixes for {problem.display_kind}")
                    taken.add(problem_key(problem))
                    allow_custom = request.keep_opset or (last_resort and users_own_op(problem.kind))
                    found = search.first_working(problem, current, result, allow_custom)
                    if found is None:
                        result.no_template.append(problem.display_kind)
                        continue
                    candidate, trial, max_abs = found
                    if trial is not None:
                        current = trial
                    else:
                        chosen_on_node.append((problem, candidate))
                    search.mappings.append(candidate.mapping)
                    if not candidate.runs_in_onnxruntime:
                        search.custom_node_kinds.add(problem_key(problem))
                    choice = candidate.choice(max_abs, on_node=trial is None)
                    if trial is not None:  # a graph rewrite says which nodes it changed
                        choice.rewrites = [r for r in trial.graph_rewrites
                                           if r.template_id == candidate.mapping.template_id]
                    result.choices.append(choice)
                    fixed_any = True
            except OutOfTime:  # what the nodes chose so far is verified on the whole model all the same
                if chosen_on_node:
                    current = check_round(search, chosen_on_node, current, result, taken)
                    saved = bool(current.saved_files)
                raise
            if chosen_on_node:
                search.fraction = (round_index + 1) / (MAX_AUTO_FIX_ROUNDS + 1)
                current = check_round(search, chosen_on_node, current, result, taken)
                saved = bool(current.saved_files)
            if fixed_any:
                continue
            search.check_time()
            with_setting = settings.first_working(
                search.with_fixes(search.mappings), current, exporter.can_fix, result.rejected,
                lambda message: report(progress, search.fraction, message), other_shapes=request.other_shapes)
            if with_setting is not None:  # what the templates could not fix, torch's capture settings did
                search.set_options(capture_settings=list(settings.chosen))
                taken -= {problem_key(p) for p in current.unsupported}
                result.no_template = []
                current = with_setting
                continue
            raised = _raised_opset(current, exporter, search.library, request.keep_opset)
            own_ops = {problem_key(p) for p in current.unsupported if exporter.can_fix(p) and users_own_op(p.kind)}
            if raised is None and own_ops and not last_resort:
                last_resort = True
                taken -= own_ops
                result.no_template = [k for k in result.no_template
                                      if k not in {p.display_kind for p in current.unsupported}]
                continue
            if raised is None:
                break
            at_raised = _export_at_opset(search, raised)
            if at_raised is None:
                break
            result.opset_raised = (result.opset_raised[0] if result.opset_raised else current.options.opset, raised)
            taken -= {problem_key(p) for p in current.unsupported}
            result.no_template = []
            current = at_raised
    except OutOfTime:
        result.stopped_at_time_limit = request.time_limit_s
        report(progress, search.fraction, f"the time limit ({request.time_limit_s:g} s) stopped the search")
    best = best.offer(_state(search, current, result, settings))
    if is_worse(current, best.analysis):
        result.kept_best = (f"the search ended with {describe(current.unsupported)}, more or worse than "
                            f"{describe(best.analysis.unsupported)}: the fixes of that state are kept")
        current, saved = _restore(search, best, result, settings), False
        if result.stopped_at_time_limit is None:  # what the kept state has left, no fix of this search held
            result.no_template = list(dict.fromkeys(p.display_kind for p in current.unsupported
                                                    if p.reason not in IN_THE_MODELS_CODE_REASONS))
    unfixable = [p.display_kind for p in current.unsupported if not exporter.can_fix(p)
                 and p.reason not in IN_THE_MODELS_CODE_REASONS]
    result.no_template = list(dict.fromkeys([*result.no_template, *unfixable]))
    if result.stopped_at_time_limit is not None:
        result.not_reached = [k for k in dict.fromkeys(p.display_kind for p in current.unsupported)
                              if k not in result.no_template]
    result.mappings = search.mappings
    result.after = current
    if request.output and not saved and (result.kept_best or not current.unsupported):
        result.after = search.export(output=request.output)
    result.whole_model_exports = search.whole_model_exports
    result.node_trials, result.whole_model_trials = search.node_trials, search.whole_model_trials + settings.trials
    result.capture_settings = [s for s in settings.chosen if s not in before.options.capture_settings]
    if request.latency_runs and (search.mappings != request.mappings or search.options != request.options):
        report(progress, 0.98, "timing the export without the fixes and with them")
        time_both_exports(started_with, search.with_fixes(search.mappings), request.latency_runs, result, cancelled)
    result.whole_model_why = [f"{kind}: {why}" for kind, why in dict.fromkeys(
        (p.display_kind, search.samples.why_not(p)) for p in before.unsupported + current.unsupported
        if p.instance in search.samples.undecided)]
    return result


def _export_at_opset(search: Search, opset: int) -> AnalysisResult | None:
    """The whole model at a raised opset; None (the opset stays) when that export crashes."""
    previous = search.options.get("opset")
    search.set_options(opset=opset)
    try:
        return search.export()
    except TrialCrashed:
        search.set_options(opset=previous)
        return None


def _state(search: Search, current: AnalysisResult, result: AutoFixResult, settings: SettingTrials) -> BestState:
    return BestState(current, list(search.mappings), dict(search.options), list(result.choices),
                     result.opset_raised, list(settings.chosen))


def _restore(search: Search, best: BestState, result: AutoFixResult, settings: SettingTrials) -> AnalysisResult:
    """Go back to ``best``: its mappings, options and choices; its analysis."""
    search.mappings = list(best.mappings)
    search.context = search.context.with_overrides(dict(best.overrides))
    result.choices, result.opset_raised = list(best.choices), best.opset_raised
    settings.chosen[:] = best.capture_settings
    return best.analysis


def _pending(current: AnalysisResult, taken: set[ProblemKey], exporter: Exporter) -> list[UnsupportedNode]:
    """One fixable problem per kind not handled yet."""
    pending, seen = [], set()
    for problem in current.unsupported:
        key = problem_key(problem)
        if key in taken or key in seen or not exporter.can_fix(problem):
            continue
        seen.add(key)
        pending.append(problem)
    return pending


def _raised_opset(current: AnalysisResult, exporter: Exporter, library: TemplateLibrary,
                  keep_opset: bool) -> int | None:
    """When what is left has no fix at this opset but has one higher up, the opset to move to."""
    if keep_opset or not current.unsupported:
        return None
    needed = [exporter.opset_that_fixes(p, current.options.opset, library) for p in current.unsupported]
    if any(n is None for n in needed):
        return None
    return max(needed)  # type: ignore[type-var]
