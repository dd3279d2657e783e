"""Worker jobs for fixing: `fix --auto` and schema stubs.

`fix --auto` chooses by running: for each unsupported op kind it tries the candidates of
:func:`fixport.core.fixing.planning.candidates_for` in order and keeps the first whose export
leaves the node supported, runs in plain ONNX Runtime and, once nothing else is left, matches
torch (:mod:`fixport.core.fixing.verification`). Each trial export runs in a forked copy of the
worker (:mod:`fixport.core.fixing.isolation`): a candidate that crashes torch is skipped. A
custom-domain node is a candidate only with ``keep_opset`` or for an op of the user's own
namespace (a ``torch.library`` op), and its choice says ONNX Runtime cannot run it. The opset is raised only when nothing works at the one asked.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from fixport.core.exporters.analysis import analyze
from fixport.core.exporters.applied_fixes import validate_mappings
from fixport.core.fixing.isolation import TrialCrashed, run_isolated
from fixport.core.fixing.planning import (
    FAMILY_GENERIC,
    MAX_AUTO_FIX_ROUNDS,
    AutoFixChoice,
    Candidate,
    candidates_for,
    opset_that_fixes,
)
from fixport.core.fixing.verification import matches_torch
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.model.errors import FixportError, TemplateValidationError
from fixport.core.model.project import FixMapping
from fixport.core.model.requests import AnalyzeRequest, AutoFixRequest, StubRequest
from fixport.core.model.results import AnalysisResult, AutoFixResult
from fixport.core.model.vocabulary import ProblemReason
from fixport.symbolics.library import TemplateLibrary


def _key(problem) -> tuple[str, str | None]:
    return problem.kind, problem.python_op_name or None


class _AutoFixer:
    """One `fix --auto` run: the mappings so far, trial exports into a scratch folder."""

    def __init__(self, request: AutoFixRequest, scratch: Path, cancelled: CancelCallback | None) -> None:
        self.request, self.scratch, self.cancelled = request, scratch, cancelled
        self.library = TemplateLibrary()
        self.options = dict(request.options)
        self.mappings: list[FixMapping] = list(request.mappings)
        self.trials = 0
        self.custom_node_kinds: set[tuple[str, str | None]] = set()  # fixes ORT cannot run, chosen on request

    def export(self, extra: list[FixMapping] | None = None, output: str | None = None) -> AnalysisResult:
        check_cancelled(self.cancelled)
        analysis = analyze(AnalyzeRequest(self.request.model, self.options, self.mappings + list(extra or []),
                                          output), cancelled=self.cancelled)
        check_cancelled(self.cancelled)
        return analysis

    def first_working(self, problem, current: AnalysisResult, result: AutoFixResult,
                      last_resort: bool) -> tuple[Candidate, AutoFixChoice, AnalysisResult] | None:
        """The first candidate for ``problem`` that works, with the export it gave."""
        opset = current.options.opset
        allow_custom = self.request.keep_opset or (last_resort and problem.reason == ProblemReason.CUSTOM_OP)
        for candidate in candidates_for(problem, opset, self.library, allow_custom):
            outcome = self.try_candidate(candidate, problem, current)
            if isinstance(outcome, str):
                result.rejected.append(f"{candidate.mapping.template_id} ({candidate.family}) for "
                                       f"{problem.display_kind}: {outcome}")
                continue
            trial, max_abs = outcome
            return candidate, candidate.choice(max_abs), trial
        return None

    def try_candidate(self, candidate: Candidate, problem, current: AnalysisResult
                      ) -> str | tuple[AnalysisResult, float | None]:
        """The trial export and the match against torch; a string says why the candidate failed."""
        try:
            validate_mappings([candidate.mapping], current.options.opset)
        except TemplateValidationError as error:
            return error.message
        self.trials += 1
        path = str(self.scratch / f"trial_{self.trials}.onnx")
        check_cancelled(self.cancelled)
        try:
            trial = run_isolated(lambda: analyze(AnalyzeRequest(self.request.model, self.options,
                                                                self.mappings + [candidate.mapping], path)))
        except TrialCrashed as error:
            return str(error)
        except FixportError as error:
            return f"the export failed: {error}"
        except Exception as error:  # a fix's own code can raise anything while the exporter registers it
            return f"the export failed: {type(error).__name__}: {error}"
        left = [p for p in trial.unsupported if _key(p) == _key(problem)
                and (candidate.runs_in_onnxruntime or p.reason != ProblemReason.RUNTIME_ERROR)]
        if left:
            return left[0].message.splitlines()[0][:300] if left[0].message else left[0].reason
        refused = [p for p in trial.unsupported if p.reason == ProblemReason.RUNTIME_ERROR
                   and _key(p) not in self.custom_node_kinds and _key(p) != _key(problem)]
        if refused and not all(p.kind.startswith("aten::") for p in refused):
            # ONNX Runtime runs a model only when everything converts: this fix broke it
            return f"ONNX Runtime cannot run the result: {refused[0].message.splitlines()[0][:300]}"
        mismatches = [p for p in trial.unsupported if p.reason == ProblemReason.MISMATCH]
        if len(mismatches) > len([p for p in current.unsupported if p.reason == ProblemReason.MISMATCH]):
            return mismatches[0].message.splitlines()[0][:300]  # the export's own check: numbers differ
        if candidate.family == FAMILY_GENERIC and (trial.unsupported or not trial.saved_files):
            return "a generic template is kept only when the whole model can be compared with torch"
        if refused:  # ORT ran for the first time and refused another aten op (e.g. CumSum on bool after
            return trial, None  # diff): a problem of its own, fixed next round; the whole model is compared then
        if trial.unsupported or not candidate.runs_in_onnxruntime or not trial.saved_files:
            return trial, None  # other problems left: the whole model is compared once they are fixed
        verdict = matches_torch(self.request.model, trial.saved_files[0])
        if not verdict.passed:
            return verdict.why
        return trial, verdict.max_abs


def auto_fix(request: AutoFixRequest, progress: ProgressCallback | None = None,
             cancelled: CancelCallback | None = None) -> AutoFixResult:
    """Fix every unsupported node with the first candidate that works (see the module docstring),
    re-exporting until nothing is left (a fix can reveal problems behind it)."""
    with tempfile.TemporaryDirectory(prefix="fixport-auto-fix-") as scratch:
        fixer = _AutoFixer(request, Path(scratch), cancelled)
        report(progress, 0.0, "exporting as it is")
        before = fixer.export()
        if before.options.exporter == "dynamo":
            from fixport.core.fixing.dynamo_auto_fix import dynamo_auto_fix

            return dynamo_auto_fix(request, before, progress, cancelled)
        result = AutoFixResult(before, before, list(fixer.mappings))
        taken = {(m.target_kind, m.python_op_name) for m in fixer.mappings}
        current = before
        last_resort = False  # custom-domain nodes for the user's own ops, once nothing else works
        for round_index in range(MAX_AUTO_FIX_ROUNDS):
            if not current.unsupported:
                break
            pending = _pending(current, taken)
            fixed_any = False
            for index, problem in enumerate(pending):
                report(progress, (round_index + index / len(pending)) / (MAX_AUTO_FIX_ROUNDS + 1),
                       f"trying fixes for {problem.display_kind}")
                found = fixer.first_working(problem, current, result, last_resort)
                taken.add(_key(problem))
                if found is None:
                    result.no_template.append(problem.display_kind)
                    continue
                candidate, choice, current = found
                fixer.mappings.append(candidate.mapping)
                if not candidate.runs_in_onnxruntime:
                    fixer.custom_node_kinds.add(_key(problem))
                result.choices.append(choice)
                fixed_any = True
            if not fixed_any:
                raised = _raise_opset(current, fixer.library, request.keep_opset)
                custom_ops = {_key(p) for p in current.unsupported if p.reason == ProblemReason.CUSTOM_OP}
                if raised is None and custom_ops and not last_resort:
                    last_resort = True
                    taken -= custom_ops
                    result.no_template = [k for k in result.no_template
                                          if k not in {p.display_kind for p in current.unsupported}]
                    continue
                if raised is None:
                    break
                result.opset_raised = (result.opset_raised[0] if result.opset_raised else current.options.opset,
                                       raised)
                fixer.options["opset"] = raised
                taken -= {_key(p) for p in current.unsupported}
                result.no_template = []
                current = fixer.export()
        result.mappings = fixer.mappings
        current.saved_files = []  # a trial's scratch file, gone with the folder
        result.after = current
        if request.output and not current.unsupported:
            result.after = fixer.export(output=request.output)
        return result


def _pending(current: AnalysisResult, taken: set) -> list:
    """One problem per kind not handled yet."""
    pending, seen = [], set()
    for problem in current.unsupported:
        if _key(problem) in taken or _key(problem) in seen:
            continue
        if problem.reason == ProblemReason.RUNTIME_ERROR and not problem.kind.startswith("aten::"):
            continue  # an ONNX node ORT refuses with no TorchScript op to re-convert
        if problem.reason == ProblemReason.RANDOM_OUTPUT:
            continue  # the model's own randomness: no symbolic can match it
        seen.add(_key(problem))
        pending.append(problem)
    return pending


def _raise_opset(current: AnalysisResult, library: TemplateLibrary, keep_opset: bool) -> int | None:
    """When what is left has no fix at this opset but has one higher up, the opset to move to."""
    if keep_opset or not current.unsupported:
        return None
    needed = [opset_that_fixes(p, current.options.opset, library) for p in current.unsupported]
    if any(n is None for n in needed):
        return None
    return max(needed)  # type: ignore[type-var]


def stub(request: StubRequest, progress: ProgressCallback | None = None,
         cancelled: CancelCallback | None = None) -> str:
    """A starting symbolic generated from the op's schema (or the Function's forward)."""
    from fixport.core.exporters.function_symbolics import autograd_functions_named
    from fixport.symbolics.stubs import PythonOpSignature, generate_stub

    python_op = None
    if request.python_op_name:
        if request.model is not None:
            open_model(request.model)  # the Function class must be imported to read its forward
        classes = autograd_functions_named(request.python_op_name)
        python_op = (PythonOpSignature.from_function(classes[0]) if classes
                     else PythonOpSignature(request.python_op_name, []))
    return generate_stub(request.kind, opset=request.opset, input_types=request.input_types,
                         python_op=python_op)
