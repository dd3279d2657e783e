"""Choosing fixes: the best template for each problem, and the opset that would fix what is left."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fixport.core.model.project import FixMapping
from fixport.symbolics.library import (
    BRIDGE_TEMPLATE_ID,
    STUB_TEMPLATE_ID,
    TemplateLibrary,
)

MAX_AUTO_FIX_ROUNDS = 4  # a fix can uncover problems behind it; stop if they never end


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
