"""The dynamo exporter's fix candidates, in the order ``fix --auto`` tries them.

For each op overload left unsupported (no ONNX function, a function that fails, a node ONNX
Runtime refuses, numbers that differ):

1. the ONNX op of the same name and inputs, found by itself (``aten::cosh`` -> Cosh);
2. dynamo templates made for the op (``symbolics/dynamo/templates``, ``symbolics/shared``) that
   run in ONNX Runtime; for a node on complex values, those written for complex inputs;
3. for a node torch.onnx made while decomposing a captured op (``prims::lgamma`` from
   ``aten::lgamma``): Fixport's own decomposition of that op, which avoids the node;
4. the op's own implementation inlined: a custom op's Python function, or Fixport's or torch's
   decomposition (``ep.run_decompositions({op: fn})``); for an error check that returns nothing
   (``_linalg_check_errors``), dropping it; for a custom op whose function torch.export cannot
   capture (a branch on a value, a size from data), a copy of it with those lines rewritten
   (:mod:`implementation_rewrite`, made on the node's values);
5. static-shape materialisation: for an op linear in its inputs (of the captured op, for a node
   torch.onnx made), the matrix torch computes at the node's shapes (shape-specialised, so after
   the fixes that keep shapes open);
6. a custom-domain node, only when allowed: ONNX Runtime cannot run it, the target runtime must.

This is the TorchScript side's order (:mod:`torchscript_candidates`), less what only a
TorchScript graph has (torch_lib replay: torch_lib is this exporter's own registry).

A capture failure has no template: it is reported with what to change in the model.
"""
from __future__ import annotations

from fixport.core.model.fix_choices import (
    CUSTOM_DOMAIN_WHY,
    FAMILY_CUSTOM_DOMAIN,
    FAMILY_DECOMPOSITION,
    FAMILY_HAND_WRITTEN,
    FAMILY_INLINED,
    FAMILY_MATERIALISED,
    FAMILY_STANDARD_OP,
    Candidate,
    custom_domain_params,
)
from fixport.core.model.project import FixMapping
from fixport.core.model.vocabulary import ProblemReason
from fixport.symbolics.library import (
    TIER_EXACT_OPSET,
    TIER_EXACT_READY,
    RankedTemplate,
    TemplateLibrary,
    params_for,
    parse_template_source,
)

INLINE_TEMPLATE_ID = "dynamo.inline_implementation"
CUSTOM_DOMAIN_TEMPLATE_ID = "dynamo.custom_domain_node"  # in the dynamo template library
_FIXABLE = {ProblemReason.NO_ONNX_FUNCTION, ProblemReason.TRANSLATION_FAILED, ProblemReason.RUNTIME_ERROR,
            ProblemReason.MISMATCH}


def fixable(problem) -> bool:
    """Whether a template can fix ``problem``: an op overload's node (not a capture failure)."""
    namespace, sep, _ = problem.kind.partition("::")
    return problem.reason in _FIXABLE and bool(sep) and namespace not in ("onnx", "torch.export", "python")


def _mapping(kind: str, offer: RankedTemplate, replaces: str = "") -> FixMapping:
    """``offer`` as the fix for ``kind``; a decomposition that ``replaces`` another op names it in its
    ``kind`` param (the op torch.onnx decomposed into ``kind``)."""
    template = offer.template
    assert template is not None
    return FixMapping(target_kind=kind, template_id=template.id, source=template.source,
                      params=params_for(replaces or kind, template.default_params()),
                      custom_opsets=dict(template.custom_opsets))


def standard_op_offers(kind: str) -> list[RankedTemplate]:
    from fixport.symbolics.synthesis.standard_op import standard_op_function_template

    source = standard_op_function_template(kind)
    if source is None:
        return []
    info = parse_template_source(source, f"<generated for {kind}>")
    return [RankedTemplate(info.id, TIER_EXACT_READY, "the ONNX op of the same name", info)]


def materialised_offers(kind: str) -> list[RankedTemplate]:
    """The linear-map fix for ``kind`` (the op it replaces: ``kind`` param), aten ops only."""
    from fixport.symbolics.synthesis.materialise import materialised_decomposition_template

    if not kind.startswith("aten::"):
        return []
    info = parse_template_source(materialised_decomposition_template(kind), f"<generated for {kind}>")
    return [RankedTemplate(info.id, TIER_EXACT_READY, "a constant matrix computed by torch at the node's static "
                           "shapes (for ops linear in their inputs)", info)]


def has_own_decomposition(kind: str) -> bool:
    """Whether Fixport's own decompositions (``symbolics/synthesis/extra_*.py``) cover ``kind``."""
    from fixport.core.exporters.dynamo.fixes import op_overload
    from fixport.core.model.errors import TemplateValidationError
    from fixport.symbolics.synthesis.decomposition import extra_decompositions

    try:
        return op_overload(kind) in extra_decompositions()
    except TemplateValidationError:
        return False


def own_decomposition_target(problem) -> str:
    """The op whose Fixport decomposition avoids ``problem``'s node, which torch.onnx made while
    decomposing a captured op: that op, else the aten op the prim is named after (torch's
    ``mvlgamma`` calls ``lgamma``, which becomes ``prims::lgamma``); '' when Fixport has neither."""
    if not problem.decomposed_from:
        return ""
    name, _, overload = problem.kind.partition("::")[2].partition(".")
    for kind in (problem.decomposed_from, f"aten::{name}.{overload}", f"aten::special_{name}.{overload}"):
        if has_own_decomposition(kind):
            return kind
    return ""


def _inline_why(kind: str) -> str:
    from fixport.core.exporters.dynamo.effects import returns_nothing
    from fixport.core.exporters.dynamo.fixes import op_overload
    from fixport.core.model.errors import TemplateValidationError

    try:
        check = returns_nothing(op_overload(kind))
    except TemplateValidationError:
        check = False
    if check:
        return "drop the check: the op returns nothing and only raises errors, which ONNX has no way to"
    return "the op's own implementation, decomposed into aten ops"


def candidates_for(problem, library: TemplateLibrary, allow_custom: bool, sample=None) -> list[Candidate]:
    """Every fix worth trying for ``problem``'s op overload, in the order of the module docstring;
    ``sample``: the node's values, for the fixes made from them."""
    from fixport.core.exporters.torch_export.implementation_rewrite import rewritten_offers
    from fixport.symbolics.synthesis.rewritten_implementation import rewritten_implementation_template

    kind = problem.kind
    offers = [o for o in library.templates_for(kind, 18) if o.template is not None]
    made_for_op = [o for o in offers if "*" not in o.template.fits and o.tier < TIER_EXACT_OPSET
                   and o.template.complex_inputs == problem.complex_inputs]
    inline = [o for o in offers if o.template_id == INLINE_TEMPLATE_ID]
    origin = problem.decomposed_from
    found = [Candidate(_mapping(kind, o), FAMILY_STANDARD_OP, o.why) for o in standard_op_offers(kind)]
    found += [Candidate(_mapping(kind, o), FAMILY_HAND_WRITTEN, o.why) for o in made_for_op
              if o.template.runs_in_onnxruntime]
    replaced = own_decomposition_target(problem)
    found += [Candidate(_mapping(kind, o, replaces=replaced), FAMILY_DECOMPOSITION,
                        f"Fixport's own decomposition of {replaced}, where torch.onnx's decomposition of {origin} "
                        f"makes {kind}") for o in inline if replaced]
    found += [Candidate(_mapping(kind, o), FAMILY_INLINED, _inline_why(kind)) for o in inline]
    found += [Candidate(_mapping(kind, o), FAMILY_INLINED, o.why)
              for o in rewritten_offers(kind, sample, rewritten_implementation_template)]
    found += [Candidate(_mapping(kind, o, replaces=origin or kind), FAMILY_MATERIALISED, o.why,
                        shape_specialised=True) for o in materialised_offers(origin or kind)]
    if allow_custom:
        found += [Candidate(_mapping(kind, o), FAMILY_HAND_WRITTEN, o.why, runs_in_onnxruntime=False)
                  for o in made_for_op if not o.template.runs_in_onnxruntime]
        for offer in offers:
            if offer.template_id == CUSTOM_DOMAIN_TEMPLATE_ID:
                mapping = _mapping(kind, offer)
                mapping.params.update(custom_domain_params(kind))
                found.append(Candidate(mapping, FAMILY_CUSTOM_DOMAIN, CUSTOM_DOMAIN_WHY, runs_in_onnxruntime=False))
    return found
