"""The dynamo exporter's fix candidates: its implementation of the strategies of
:data:`~fixport.core.records.fix_strategies.FIX_STRATEGIES` it does not decline, tried in that list's order.

For each op overload left unsupported (no ONNX function, a function that fails, a node ONNX
Runtime refuses, numbers that differ), the strategies give:

1. the ONNX op of the same name and inputs, found by itself (``aten::cosh`` -> Cosh);
2. dynamo templates made for the op (``symbolics/dynamo/templates``, ``symbolics/shared``) that
   run in ONNX Runtime; for a node on complex values, those written for complex inputs (those
   built for the traced sizes after the ones that keep shapes open);
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

The TorchScript side implements the same list (:mod:`torchscript_candidates`); this one declines
what only a TorchScript graph has (torch_lib replay: torch_lib is this exporter's own registry).

For a failure in torch.onnx's own passes over the captured graph (``export_failed``: type
promotion finds no overload for a float minus an integer tensor), the graph rewrite strategy gives
an FX pass at the failing line, run on the captured program before those passes; the other
strategies, which give the op an ONNX function, do not apply to it.

A capture failure has no template: its lines changed for the capture (``CAPTURE_CODE_CHANGE``,
tried on the loaded model while it was analysed) are its one candidate; the rest is advice.
"""
from __future__ import annotations

from dataclasses import dataclass

from fixport.core.exporters.capture_change_fix import CODE_CHANGE_TEMPLATE_ID
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import (
    CUSTOM_DOMAIN_WHY,
    FAMILY_CODE_CHANGE,
    FAMILY_CUSTOM_DOMAIN,
    FAMILY_DECOMPOSITION,
    FAMILY_GRAPH_REWRITE,
    FAMILY_HAND_WRITTEN,
    FAMILY_INLINED,
    FAMILY_MATERIALISED,
    FAMILY_STANDARD_OP,
    Candidate,
    custom_domain_params,
)
from fixport.core.records.fix_strategies import (
    CAPTURE_CODE_CHANGE,
    CUSTOM_DOMAIN,
    DECOMPOSITION,
    GRAPH_REWRITE,
    HAND_WRITTEN,
    HAND_WRITTEN_AT_TRACED_SIZES,
    HAND_WRITTEN_CUSTOM_RUNTIME,
    INLINED,
    MATERIALISED,
    REWRITTEN_IMPLEMENTATION,
    STANDARD_OP,
    StrategyTable,
    candidates_in_order,
)
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
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
# Fixed by code changed for the capture only: what stopped it, or a size it pinned (size_shortcuts)
_CODE_CHANGE_ONLY = (ProblemReason.CAPTURE_FAILED, ProblemReason.SHAPE_SPECIALISED)
_PASS_FAILURE = ProblemReason.EXPORT_FAILED  # torch.onnx's own pass failed at the node: only a graph rewrite


def graph_rewrite_offers(kind: str, line: str = "") -> list[RankedTemplate]:
    """The FX passes that may make torch.onnx's own passes get through a node of ``kind`` at ``line``."""
    from fixport.symbolics.synthesis.graph_rewrite import ARITHMETIC_KINDS, cast_integer_operand_template

    if kind not in ARITHMETIC_KINDS:
        return []
    info = parse_template_source(cast_integer_operand_template(line), f"<generated for {kind}>")
    return [RankedTemplate(info.id, TIER_EXACT_READY, "an FX pass before torch.onnx's own: the integer operand "
                           "cast to the float type, so type promotion finds an overload", info)]


def fixable(problem) -> bool:
    """Whether a template can fix ``problem``: an op overload's node, or a capture failure whose
    code change was tried and holds (``code_change_fix``)."""
    if problem.reason in _CODE_CHANGE_ONLY:
        return bool(problem.code_change_fix)
    namespace, sep, _ = problem.kind.partition("::")
    if problem.reason == _PASS_FAILURE:
        return bool(graph_rewrite_offers(problem.kind))
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
    from fixport.core.words.errors import TemplateValidationError
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
    from fixport.core.words.errors import TemplateValidationError

    try:
        check = returns_nothing(op_overload(kind))
    except TemplateValidationError:
        check = False
    if check:
        return "drop the check: the op returns nothing and only raises errors, which ONNX has no way to"
    return "the op's own implementation, decomposed into aten ops"


@dataclass
class _Offers:
    """What the dynamo exporter prepared for one problem; each strategy takes its candidates from it."""

    problem: UnsupportedNode
    offers: list[RankedTemplate]
    made_for_op: list[RankedTemplate]
    inline: list[RankedTemplate]
    rewritten: list[RankedTemplate]


def _prepared(problem: UnsupportedNode, library: TemplateLibrary, sample) -> _Offers:
    from fixport.core.exporters.torch_export.implementation_rewrite import rewritten_offers
    from fixport.symbolics.synthesis.rewritten_implementation import rewritten_implementation_template

    if problem.reason == ProblemReason.CAPTURE_FAILED:  # no op: only its code change
        return _Offers(problem, [], [], [], [])
    offers = [o for o in library.templates_for(problem.kind, 18) if o.template is not None]
    made_for_op = [o for o in offers if "*" not in o.template.fits and o.tier < TIER_EXACT_OPSET
                   and o.template.complex_inputs == problem.complex_inputs]
    inline = [o for o in offers if o.template_id == INLINE_TEMPLATE_ID]
    return _Offers(problem, offers, made_for_op, inline,
                   rewritten_offers(problem.kind, sample, rewritten_implementation_template))


def _graph_rewrite(offers: _Offers) -> list[Candidate]:
    """An FX pass at the line whose node torch.onnx's own pass failed on."""
    problem = offers.problem
    if problem.reason != _PASS_FAILURE:
        return []
    where = f" at {problem.source}" if problem.source else ""
    return [Candidate(_mapping(problem.kind, o), FAMILY_GRAPH_REWRITE, f"{o.why}{where}")
            for o in graph_rewrite_offers(problem.kind, problem.source)]


def _capture_code_change(offers: _Offers) -> list[Candidate]:
    """The capture failure's lines changed for the capture (:mod:`fixport.core.exporters.capture_change_fix`)."""
    problem = offers.problem
    if not problem.code_change_fix:
        return []
    mapping = FixMapping(target_kind=problem.kind, template_id=CODE_CHANGE_TEMPLATE_ID, source=problem.code_change_fix)
    description = parse_template_source(problem.code_change_fix).description.rstrip(".")
    return [Candidate(mapping, FAMILY_CODE_CHANGE, f"{description[0].lower()}{description[1:]} (the diff is in the "
                      "fix's source; it holds for every value: the check ran the model at other values too)")]


def _standard_op(offers: _Offers) -> list[Candidate]:
    kind = offers.problem.kind
    return [Candidate(_mapping(kind, o), FAMILY_STANDARD_OP, o.why) for o in standard_op_offers(kind)]


def _hand_written(offers: _Offers, shape_specialised: bool = False) -> list[Candidate]:
    return [Candidate(_mapping(offers.problem.kind, o), FAMILY_HAND_WRITTEN, o.why) for o in offers.made_for_op
            if o.template.runs_in_onnxruntime and o.template.shape_specialised == shape_specialised]


def _hand_written_at_traced_sizes(offers: _Offers) -> list[Candidate]:
    return _hand_written(offers, shape_specialised=True)


def _decomposition(offers: _Offers) -> list[Candidate]:
    """Fixport's own decomposition of the op torch.onnx decomposed into this node's."""
    kind, replaced = offers.problem.kind, own_decomposition_target(offers.problem)
    return [Candidate(_mapping(kind, o, replaces=replaced), FAMILY_DECOMPOSITION,
                      f"Fixport's own decomposition of {replaced}, where torch.onnx's decomposition of "
                      f"{offers.problem.decomposed_from} makes {kind}") for o in offers.inline if replaced]


def _inlined(offers: _Offers) -> list[Candidate]:
    kind = offers.problem.kind
    return [Candidate(_mapping(kind, o), FAMILY_INLINED, _inline_why(kind)) for o in offers.inline]


def _rewritten_implementation(offers: _Offers) -> list[Candidate]:
    return [Candidate(_mapping(offers.problem.kind, o), FAMILY_INLINED, o.why) for o in offers.rewritten]


def _materialised(offers: _Offers) -> list[Candidate]:
    kind, origin = offers.problem.kind, offers.problem.decomposed_from
    return [Candidate(_mapping(kind, o, replaces=origin or kind), FAMILY_MATERIALISED, o.why,
                      shape_specialised=True) for o in materialised_offers(origin or kind)]


def _hand_written_custom_runtime(offers: _Offers) -> list[Candidate]:
    return [Candidate(_mapping(offers.problem.kind, o), FAMILY_HAND_WRITTEN, o.why, runs_in_onnxruntime=False)
            for o in offers.made_for_op if not o.template.runs_in_onnxruntime]


def _custom_domain(offers: _Offers) -> list[Candidate]:
    kind, found = offers.problem.kind, []
    for offer in offers.offers:
        if offer.template_id == CUSTOM_DOMAIN_TEMPLATE_ID:
            mapping = _mapping(kind, offer)
            mapping.params.update(custom_domain_params(kind))
            found.append(Candidate(mapping, FAMILY_CUSTOM_DOMAIN, CUSTOM_DOMAIN_WHY, runs_in_onnxruntime=False))
    return found


# The strategies of FIX_STRATEGIES this exporter implements. It declines torch_lib replay (torch_lib
# is this exporter's own registry), the cast to a node's traced types and generic templates (fits: *),
# which it never offered, and the TorchScript trace's own fixes (a traced value, a size the trace folds).
STRATEGIES: StrategyTable[_Offers] = {
    GRAPH_REWRITE: _graph_rewrite,
    CAPTURE_CODE_CHANGE: _capture_code_change,
    STANDARD_OP: _standard_op,
    HAND_WRITTEN: _hand_written,
    HAND_WRITTEN_AT_TRACED_SIZES: _hand_written_at_traced_sizes,
    DECOMPOSITION: _decomposition,
    INLINED: _inlined,
    REWRITTEN_IMPLEMENTATION: _rewritten_implementation,
    MATERIALISED: _materialised,
    HAND_WRITTEN_CUSTOM_RUNTIME: _hand_written_custom_runtime,
    CUSTOM_DOMAIN: _custom_domain,
}


def candidates_for(problem: UnsupportedNode, library: TemplateLibrary, allow_custom: bool,
                   sample=None) -> list[Candidate]:
    """Every fix worth trying for ``problem``'s op overload, in the order of
    :data:`~fixport.core.records.fix_strategies.FIX_STRATEGIES`; ``sample``: the node's values, for
    the fixes made from them."""
    if problem.reason == _PASS_FAILURE:  # the op has an ONNX function: what failed is torch.onnx's pass
        offers = _Offers(problem, [], [], [], [])
        return candidates_in_order({GRAPH_REWRITE: _graph_rewrite}, offers, allow_custom)
    if problem.reason == ProblemReason.SHAPE_SPECIALISED:  # a size the capture pinned: its code change alone
        offers = _Offers(problem, [], [], [], [])
        return candidates_in_order({CAPTURE_CODE_CHANGE: _capture_code_change}, offers, allow_custom)
    return candidates_in_order(STRATEGIES, _prepared(problem, library, sample), allow_custom)
