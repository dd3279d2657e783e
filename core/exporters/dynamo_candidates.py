"""The dynamo exporter's fix candidates, in the order ``fix --auto`` tries them.

For each op overload left unsupported (no ONNX function, a function that fails, a node ONNX
Runtime refuses, numbers that differ):

1. dynamo templates made for the op (``symbolics/dynamo/templates``) that run in ONNX Runtime;
2. the op's own implementation inlined: a custom op's Python function, or torch's decomposition
   (``ep.run_decompositions({op: fn})``);
3. a custom-domain node, only when allowed: ONNX Runtime cannot run it, the target runtime must.

A capture failure has no template: it is reported with what to change in the model.
"""
from __future__ import annotations

from fixport.core.model.fix_choices import (
    CUSTOM_DOMAIN_WHY,
    FAMILY_CUSTOM_DOMAIN,
    FAMILY_HAND_WRITTEN,
    FAMILY_INLINED,
    Candidate,
    custom_domain_params,
)
from fixport.core.model.project import FixMapping
from fixport.core.model.vocabulary import ProblemReason
from fixport.symbolics.library import TIER_EXACT_OPSET, RankedTemplate, TemplateLibrary, params_for

INLINE_TEMPLATE_ID = "dynamo.inline_implementation"
CUSTOM_DOMAIN_TEMPLATE_ID = "dynamo.custom_domain_node"  # in the dynamo template library
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


def candidates_for(problem, library: TemplateLibrary, allow_custom: bool) -> list[Candidate]:
    """Every fix worth trying for ``problem``'s op overload, in the order of the module docstring."""
    kind = problem.kind
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
                mapping.params.update(custom_domain_params(kind))
                found.append(Candidate(mapping, FAMILY_CUSTOM_DOMAIN, CUSTOM_DOMAIN_WHY, runs_in_onnxruntime=False))
    return found
