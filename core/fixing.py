"""Applying fixes: project mappings -> registered symbolics for one export, and `fix --auto`."""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from core.errors import TemplateValidationError
from core.project import FixMapping
from symbolics.library import BRIDGE_TEMPLATE_ID, STUB_TEMPLATE_ID, TemplateLibrary

MAX_AUTO_FIX_ROUNDS = 4  # a fix can uncover problems behind it; stop if they never end


def custom_opsets_of(mapping: FixMapping) -> dict[str, int]:
    """Domains a mapping's nodes use; a custom-domain template names its domain in params."""
    opsets = dict(mapping.custom_opsets)
    domain = mapping.params.get("domain")
    if isinstance(domain, str) and domain:
        if domain != "custom":
            opsets.pop("custom", None)  # the template's placeholder domain, renamed by the user
        opsets[domain] = int(mapping.params.get("domain_version", 1))
    return opsets


def mapping_specs(mappings: list[FixMapping], library: TemplateLibrary | None = None):
    """Registration specs (core.symbolic_registration.MappingSpec) for project mappings."""
    from core.symbolic_registration import MappingSpec

    library = library or TemplateLibrary()
    specs = []
    for mapping in mappings:
        template = library.builtins.get(mapping.template_id) or library.user.get(mapping.template_id)
        specs.append(MappingSpec(
            target_kind=mapping.target_kind, instance=mapping.instance, template_id=mapping.template_id,
            source=mapping.source, params=dict(mapping.params), python_op_name=mapping.python_op_name,
            custom_opsets=custom_opsets_of(mapping),
            min_opset=template.min_opset if template and not mapping.edited else 1,
            max_opset=template.max_opset if template and not mapping.edited else None))
    return specs


def validate_mappings(mappings: list[FixMapping], opset: int) -> None:
    """Raise TemplateValidationError for the first mapping that cannot work at ``opset``."""
    from core.symbolic_registration import validate_mapping

    for mapping, spec in zip(mappings, mapping_specs(mappings)):
        problems = validate_mapping(spec, opset)
        if problems:
            first = problems[0]
            raise TemplateValidationError(
                f"The fix for {mapping.label} ({mapping.template_id}): {first.message}",
                "Edit the template source or pick another template.", line=first.line, target=mapping.label)


@contextmanager
def applied_mappings(mappings: list[FixMapping], opset: int) -> Iterator[dict[str, int]]:
    """Register the mappings for one export; yields the custom_opsets they need."""
    if not mappings:
        yield {}
        return
    from core.conversion_hooks import current_instance_key
    from core.symbolic_registration import TemplateError, registered_mappings

    validate_mappings(mappings, opset)
    try:
        with registered_mappings(mapping_specs(mappings), opset, current_instance_key) as custom_opsets:
            yield custom_opsets
    except TemplateError as error:
        raise TemplateValidationError(str(error), "Fix the template source.", line=error.line) from error


@dataclass
class AutoFixChoice:
    """What `fix --auto` picked for one op kind (or one Function)."""

    kind: str
    python_op_name: str | None
    template_id: str
    why: str


@dataclass
class AutoFixPlan:
    mappings: list[FixMapping] = field(default_factory=list)
    choices: list[AutoFixChoice] = field(default_factory=list)
    no_template: list[str] = field(default_factory=list)  # kinds nothing could be picked for


CUSTOM_DOMAIN_TEMPLATE_ID = "custom_domain.custom_op"


def best_mappings_for(problems, opset: int, library: TemplateLibrary, taken: set[tuple[str, str | None]],
                      allow_custom: bool = True) -> AutoFixPlan:
    """Pick the best-ranked built-in template for every problem kind not handled yet.

    Templates whose output ONNX Runtime runs come first; with ``allow_custom`` a kind with no
    such template gets a custom-domain node (for a backend plugin) as the last resort.
    """
    plan = AutoFixPlan()
    for problem in problems:
        key = (problem.kind, problem.python_op_name or None)
        if key in taken or problem.reason == "runtime_error":
            continue
        offers = [o for o in library.templates_for(problem.kind, opset, problem.python_op_name or None)
                  if o.template is not None and o.template_id != STUB_TEMPLATE_ID
                  and o.template.opset_ok(opset)
                  and ("*" not in o.template.fits or o.template_id == BRIDGE_TEMPLATE_ID)]
        runnable = [o for o in offers if o.template.runs_in_onnxruntime]
        chosen = (runnable or (offers if allow_custom else []) or [None])[0]
        extra_params: dict = {}
        if chosen is None and allow_custom and CUSTOM_DOMAIN_TEMPLATE_ID in library.builtins:
            chosen = next(o for o in library.templates_for(problem.kind, opset) if o.template_id ==
                          CUSTOM_DOMAIN_TEMPLATE_ID)
            extra_params = _custom_domain_params(problem.kind, problem.python_op_name)
        if chosen is None:
            if problem.display_kind not in plan.no_template:
                plan.no_template.append(problem.display_kind)
            continue
        taken.add(key)
        template = chosen.template
        params = {**template.default_params(), **chosen.extra_params, **extra_params}
        plan.mappings.append(FixMapping(
            target_kind=problem.kind, template_id=template.id, source=template.source, params=params,
            python_op_name=problem.python_op_name or None, custom_opsets=dict(template.custom_opsets)))
        plan.choices.append(AutoFixChoice(problem.kind, problem.python_op_name or None, template.id, chosen.why))
    return plan


def _custom_domain_params(kind: str, python_op_name: str | None) -> dict:
    """'mylib::soft_clip' -> domain 'mylib', op 'SoftClip' (aten ops go to domain 'custom')."""
    namespace, _, name = kind.partition("::")
    name = python_op_name or name
    domain = namespace if namespace not in ("aten", "prim") else "custom"
    return {"domain": domain, "op_name": "".join(part[:1].upper() + part[1:] for part in name.split("_"))}


_SUGGESTED_OPSET_RE = re.compile(r"opset version (\d+)")


def opset_that_fixes(problem, opset: int, library: TemplateLibrary) -> int | None:
    """The lowest opset above ``opset`` where torch or a runnable built-in template handles
    ``problem``'s kind; None when no opset does."""
    candidates = []
    if problem.first_supported_opset and problem.first_supported_opset > opset and problem.reason == "no_symbolic":
        candidates.append(problem.first_supported_opset)
    if problem.reason == "symbolic_rejected":  # e.g. "... Please try opset version 11."
        candidates += [int(v) for v in _SUGGESTED_OPSET_RE.findall(problem.message) if int(v) > opset]
    for offer in library.templates_for(problem.kind, opset, problem.python_op_name or None):
        template = offer.template
        if template is not None and template.runs_in_onnxruntime and template.min_opset > opset \
                and "*" not in template.fits:
            candidates.append(template.min_opset)
    return min(candidates) if candidates else None
