"""`fix --auto` for the dynamo exporter: choose by running, as for the TorchScript exporter.

For each op overload left unsupported (no ONNX function, a function that fails, a node ONNX
Runtime refuses, numbers that differ) the candidates are tried in this order, and the first
whose export leaves the node fixed, runs in plain ONNX Runtime and matches torch is kept:

1. dynamo templates made for the op (``symbolics/dynamo/templates``) that run in ONNX Runtime;
2. the op's own implementation inlined: a custom op's Python function, or torch's decomposition
   (``ep.run_decompositions({op: fn})``);
3. a custom-domain node, only with ``--keep-opset`` or, for the user's own (non-aten) ops, once
   nothing else works: ONNX Runtime cannot run it, the target runtime must.

A capture failure has no template: it is reported with what to change in the model.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from fixport.core.exporters.analysis import analyze
from fixport.core.fixing.planning import (
    FAMILY_CUSTOM_DOMAIN,
    FAMILY_HAND_WRITTEN,
    MAX_AUTO_FIX_ROUNDS,
    Candidate,
)
from fixport.core.fixing.verification import matches_torch
from fixport.core.model.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.model.errors import FixportError
from fixport.core.model.project import FixMapping
from fixport.core.model.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.model.results import AnalysisResult, AutoFixResult
from fixport.core.model.vocabulary import ProblemReason
from fixport.symbolics.dynamo.library import dynamo_library, params_for
from fixport.symbolics.library import TIER_EXACT_OPSET, RankedTemplate, TemplateLibrary

FAMILY_INLINED = "inlined_implementation"
INLINE_TEMPLATE_ID = "dynamo.inline_implementation"
CUSTOM_DOMAIN_TEMPLATE_ID = "dynamo.custom_domain_node"
_FIXABLE = {ProblemReason.NO_ONNX_FUNCTION, ProblemReason.TRANSLATION_FAILED, ProblemReason.RUNTIME_ERROR,
            ProblemReason.MISMATCH}


def fixable(problem) -> bool:
    """Whether a template can fix ``problem``: an op overload's node (not a capture failure)."""
    namespace, sep, _ = problem.kind.partition("::")
    return problem.reason in _FIXABLE and bool(sep) and namespace not in ("onnx", "torch.export", "python")


def _mapping(kind: str, offer: RankedTemplate) -> FixMapping:
    template = offer.template
    assert template is not None
    return FixMapping(target_kind=kind, template_id=template.id, source=template.source,
                      params=params_for(kind, template.default_params()), custom_opsets=dict(template.custom_opsets))


def _custom_params(kind: str) -> dict:
    """'mydyn::soft_clip.default' -> domain 'mydyn', op 'SoftClip' (aten ops go to domain 'custom')."""
    namespace, _, rest = kind.partition("::")
    name = rest.split(".", 1)[0]
    return {"domain": namespace if namespace != "aten" else "custom",
            "op_name": "".join(part[:1].upper() + part[1:] for part in name.split("_"))}


def dynamo_candidates(kind: str, library: TemplateLibrary, allow_custom: bool) -> list[Candidate]:
    """Every fix worth trying for op overload ``kind``, in the order of the module docstring."""
    offers = [o for o in library.templates_for(kind, 18) if o.template is not None]
    made_for_op = [o for o in offers if "*" not in o.template.fits and o.tier < TIER_EXACT_OPSET]
    found = [Candidate(_mapping(kind, o), FAMILY_HAND_WRITTEN, o.why) for o in made_for_op
             if o.template.runs_in_onnxruntime]
    found += [Candidate(_mapping(kind, o), FAMILY_INLINED, "the op's own implementation, decomposed into aten ops")
              for o in offers if o.template_id == INLINE_TEMPLATE_ID]
    if allow_custom:
        found += [Candidate(_mapping(kind, o), FAMILY_HAND_WRITTEN, o.why, runs_in_onnxruntime=False)
                  for o in made_for_op if not o.template.runs_in_onnxruntime]
        for offer in offers:
            if offer.template_id == CUSTOM_DOMAIN_TEMPLATE_ID:
                mapping = _mapping(kind, offer)
                mapping.params.update(_custom_params(kind))
                found.append(Candidate(mapping, FAMILY_CUSTOM_DOMAIN, "a custom-domain node: ONNX Runtime cannot "
                                       "run it; the target runtime must implement it", runs_in_onnxruntime=False))
    return found


class _DynamoFixer:
    """One run: the mappings so far and trial exports into a scratch folder."""

    def __init__(self, request: AutoFixRequest, scratch: Path, cancelled: CancelCallback | None) -> None:
        self.request, self.scratch, self.cancelled = request, scratch, cancelled
        self.library = dynamo_library()
        self.mappings: list[FixMapping] = list(request.mappings)
        self.trials = 0
        self.custom_kinds: set[str] = set()

    def export(self, extra: list[FixMapping] | None = None, output: str | None = None) -> AnalysisResult:
        check_cancelled(self.cancelled)
        return analyze(AnalyzeRequest(self.request.model, dict(self.request.options),
                                      self.mappings + list(extra or []), output), cancelled=self.cancelled)

    def try_candidate(self, candidate: Candidate, kind: str) -> str | tuple[AnalysisResult, float | None]:
        """The trial export and the match against torch; a string says why the candidate failed."""
        self.trials += 1
        try:
            trial = self.export([candidate.mapping], output=str(self.scratch / f"trial_{self.trials}.onnx"))
        except FixportError as error:
            return f"the export failed: {error}"
        except Exception as error:  # a fix's own code can raise anything while it is traced
            return f"the export failed: {type(error).__name__}: {error}"
        left = [p for p in trial.unsupported if p.kind == kind
                and (candidate.runs_in_onnxruntime or p.reason != ProblemReason.RUNTIME_ERROR)]
        if left:
            return left[0].message.splitlines()[0][:300] if left[0].message else str(left[0].reason)
        refused = [p for p in trial.unsupported if p.reason == ProblemReason.RUNTIME_ERROR
                   and p.kind not in self.custom_kinds and p.kind != kind]
        if refused:
            return f"ONNX Runtime cannot run the result: {refused[0].message.splitlines()[0][:300]}"
        if trial.unsupported or not candidate.runs_in_onnxruntime or not trial.saved_files:
            return trial, None  # other problems left: the whole model is compared once they are fixed
        verdict = matches_torch(self.request.model, trial.saved_files[0])
        return (trial, verdict.max_abs) if verdict.passed else verdict.why

    def first_working(self, kind: str, result: AutoFixResult, allow_custom: bool
                      ) -> tuple[Candidate, AnalysisResult, float | None] | None:
        for candidate in dynamo_candidates(kind, self.library, allow_custom):
            outcome = self.try_candidate(candidate, kind)
            if isinstance(outcome, str):
                result.rejected.append(f"{candidate.mapping.template_id} ({candidate.family}) for {kind}: {outcome}")
                continue
            return candidate, outcome[0], outcome[1]
        return None


def dynamo_auto_fix(request: AutoFixRequest, before: AnalysisResult, progress: ProgressCallback | None = None,
                    cancelled: CancelCallback | None = None) -> AutoFixResult:
    """Fix every fixable problem of a dynamo export (``before``) with the first candidate that works."""
    with tempfile.TemporaryDirectory(prefix="fixport-dynamo-fix-") as scratch:
        fixer = _DynamoFixer(request, Path(scratch), cancelled)
        result = AutoFixResult(before, before, list(fixer.mappings))
        taken = {m.target_kind for m in fixer.mappings}
        current, last_resort = before, False
        for round_index in range(MAX_AUTO_FIX_ROUNDS):
            pending = list(dict.fromkeys(p.kind for p in current.unsupported if fixable(p) and p.kind not in taken))
            fixed_any = False
            for index, kind in enumerate(pending):
                report(progress, (round_index + index / len(pending)) / (MAX_AUTO_FIX_ROUNDS + 1),
                       f"trying fixes for {kind}")
                taken.add(kind)
                allow_custom = request.keep_opset or (last_resort and not kind.startswith("aten::"))
                found = fixer.first_working(kind, result, allow_custom)
                if found is None:
                    result.no_template.append(kind)
                    continue
                candidate, current, max_abs = found
                fixer.mappings.append(candidate.mapping)
                if not candidate.runs_in_onnxruntime:
                    fixer.custom_kinds.add(kind)
                result.choices.append(candidate.choice(max_abs))
                fixed_any = True
            if fixed_any:
                continue
            custom = {p.kind for p in current.unsupported if fixable(p) and not p.kind.startswith("aten::")}
            if last_resort or not custom:
                break
            last_resort = True  # the user's own ops: a custom-domain node, once nothing else works
            taken -= custom
            result.no_template = [k for k in result.no_template if k not in custom]
        result.no_template = list(dict.fromkeys([*result.no_template,
                                                 *(p.display_kind for p in current.unsupported if not fixable(p))]))
        result.mappings = fixer.mappings
        current.saved_files = []  # a trial's scratch file, gone with the folder
        result.after = current
        if request.output and not current.unsupported:
            result.after = fixer.export(output=request.output)
        return result
