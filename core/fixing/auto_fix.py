"""Worker jobs for fixing: `fix --auto` and schema stubs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.exporters.analysis import analyze
from fixport.core.exporters.applied_fixes import validate_mappings
from fixport.core.fixing.planning import (
    MAX_AUTO_FIX_ROUNDS,
    AutoFixChoice,
    best_mappings_for,
    opset_that_fixes,
)
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import ProgressCallback, report
from fixport.core.model.errors import TemplateValidationError
from fixport.core.model.project import FixMapping
from fixport.core.model.results import AnalysisResult, ModelRequest
from fixport.symbolics.library import TemplateLibrary


@dataclass
class AutoFixResult:
    before: AnalysisResult
    after: AnalysisResult
    mappings: list[FixMapping] = field(default_factory=list)
    choices: list[AutoFixChoice] = field(default_factory=list)
    no_template: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # templates that did not validate, and why
    opset_raised: tuple[int, int] | None = None  # (from, to) when no template worked at the asked opset

    @property
    def changed(self) -> bool:
        return bool(self.mappings)


def auto_fix(request: ModelRequest, options: dict[str, Any] | None = None,
             mappings: list[FixMapping] | None = None, output: str | None = None, keep_opset: bool = False,
             progress: ProgressCallback | None = None) -> AutoFixResult:
    """Pick the best-ranked built-in template for every unsupported node and re-export until
    nothing is left or no template fits (a fix can reveal problems behind it)."""
    library = TemplateLibrary()
    current_mappings = list(mappings or [])
    report(progress, 0.0, "exporting as it is")
    before = analyze(request, options, mappings=current_mappings)
    result = AutoFixResult(before, before, current_mappings)
    taken = {(m.target_kind, m.python_op_name) for m in current_mappings}
    current = before
    for round_index in range(MAX_AUTO_FIX_ROUNDS):
        if not current.unsupported:
            break
        accepted = _accepted_mappings(current, library, taken, result, allow_custom=keep_opset)
        if not accepted:
            raised = _raise_opset(current, library, keep_opset)
            if raised is not None:
                result.opset_raised = (result.opset_raised[0] if result.opset_raised else current.options.opset,
                                       raised)
                options = {**(options or {}), "opset": raised}
                current = analyze(request, options, mappings=current_mappings)
                continue
            accepted = _accepted_mappings(current, library, taken, result, allow_custom=True)
        if not accepted:
            break
        current_mappings += accepted
        report(progress, (round_index + 1) / (MAX_AUTO_FIX_ROUNDS + 1), f"re-exporting with {len(current_mappings)} fix(es)")
        current = analyze(request, options, mappings=current_mappings)
    result.mappings = current_mappings
    result.after = current
    if output and not current.unsupported:
        result.after = analyze(request, options, mappings=current_mappings, output=output)
    return result


def _accepted_mappings(current: AnalysisResult, library: TemplateLibrary, taken: set, result: AutoFixResult,
                       allow_custom: bool) -> list[FixMapping]:
    """The plan's mappings that validate at the current opset; the others are noted as rejected."""
    plan = best_mappings_for(current.unsupported, current.options.opset, library, taken, allow_custom)
    result.no_template = plan.no_template
    accepted = []
    for mapping, choice in zip(plan.mappings, plan.choices):
        try:
            validate_mappings([mapping], current.options.opset)
        except TemplateValidationError as error:
            result.rejected.append(f"{choice.template_id} for {mapping.label}: {error.message}")
            continue
        accepted.append(mapping)
        result.choices.append(choice)
    return accepted


def _raise_opset(current: AnalysisResult, library: TemplateLibrary, keep_opset: bool) -> int | None:
    """When what is left has no fix at this opset but has one higher up, the opset to move to."""
    if keep_opset or not current.unsupported:
        return None
    needed = [opset_that_fixes(p, current.options.opset, library) for p in current.unsupported]
    if any(n is None for n in needed):
        return None
    return max(needed)  # type: ignore[type-var]


def stub(kind: str, opset: int, input_types: list[str] | None = None, python_op_name: str | None = None,
         model_request: ModelRequest | None = None, progress: ProgressCallback | None = None) -> str:
    """A starting symbolic generated from the op's schema (or the Function's forward)."""
    from fixport.core.exporters.function_symbolics import autograd_functions_named
    from fixport.symbolics.stubs import PythonOpSignature, generate_stub

    python_op = None
    if python_op_name:
        if model_request is not None:
            open_model(model_request)  # the Function class must be imported to read its forward
        classes = autograd_functions_named(python_op_name)
        python_op = (PythonOpSignature.from_function(classes[0]) if classes
                     else PythonOpSignature(python_op_name, []))
    return generate_stub(kind, opset=opset, input_types=input_types, python_op=python_op)
