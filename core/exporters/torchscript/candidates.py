"""The TorchScript exporter's fix candidates: its implementation of every strategy of
:data:`~fixport.core.records.fix_strategies.FIX_STRATEGIES`, tried in that list's order.

For one op kind, ``fix --auto`` keeps the first candidate whose export leaves the node supported,
runs in plain ONNX Runtime and matches torch. In TorchScript's words, the strategies give:

0. for a node ONNX Runtime has no kernel for at its types (``problem.kernel_gap``): torch's own
   symbolic with the inputs cast to the dtypes torch traced them with (the exporter's type
   promotion made a float32 value float64);
1. the ONNX op of the same name and inputs, found by itself (``aten::cosh`` -> Cosh);
2. hand-written templates made for the op (or its namespace) that run in ONNX Runtime;
3. onnxscript's torch_lib implementation, replayed at the export's opset;
4. hand-written templates made for the op that are built for the traced sizes (shape-specialised),
   then torch's own decomposition of the op, replayed through the exporter's symbolics (for a
   ``torch.library`` op: its own Python implementation, inlined, else a copy of it with the
   lines that depend on a tensor's value rewritten, made on the node's values), which folds sizes
   too;
5. static-shape materialisation: for an op linear in its inputs, the matrix torch computes at
   the node's shapes (shape-specialised, so after the fixes that keep shapes open);
6. generic templates (``fits: *``) that run in ONNX Runtime;
7. a custom-domain node, only when allowed: ONNX Runtime cannot run it.

For an input whose value the trace bakes into a resize (``baked_input``: ``float(scale)`` handed to
``F.interpolate``), the traced-value strategy gives the one fix that keeps it an input: the model
traced with that interpolate run as a generated ``autograd.Function`` whose symbolic passes the
runtime scale to ``Resize`` (:mod:`fixport.symbolics.synthesis.runtime_scale`). No conversion of
the node changes a constant the trace made, so the other strategies do not apply to it.

For a size the trace folds into a constant at a line it warns about (``shape_specialised``:
``math.ceil(n / s)``), the traced-size strategy gives that line changed to integer arithmetic the
trace keeps, run in place of the method while the model is traced
(:mod:`fixport.core.exporters.traced_size_changes`); nothing else is tried for it.

The opset is kept; only when no candidate works for what is left does ``opset_that_fixes``
name a higher opset where torch or a template handles it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from fixport.core.exporters.capture_change_fix import TRACED_CODE_CHANGE_TEMPLATE_ID
from fixport.core.onnx_io.opset_needs import opset_that_runs
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import (
    CUSTOM_DOMAIN_WHY,
    FAMILY_BRIDGE,
    FAMILY_CUSTOM_DOMAIN,
    FAMILY_DECOMPOSITION,
    FAMILY_GENERIC,
    FAMILY_HAND_WRITTEN,
    FAMILY_INLINED,
    FAMILY_KERNEL_TYPES,
    FAMILY_MATERIALISED,
    FAMILY_STANDARD_OP,
    FAMILY_TRACED_SIZE_CHANGE,
    FAMILY_TRACED_VALUE_INPUT,
    Candidate,
    custom_domain_params,
)
from fixport.core.records.fix_strategies import (
    CUSTOM_DOMAIN,
    DECOMPOSITION,
    GENERIC,
    HAND_WRITTEN,
    HAND_WRITTEN_AT_TRACED_SIZES,
    HAND_WRITTEN_CUSTOM_RUNTIME,
    INLINED,
    KERNEL_TYPES,
    MATERIALISED,
    REWRITTEN_IMPLEMENTATION,
    STANDARD_OP,
    TORCHLIB_BRIDGE,
    TRACED_SIZE_CHANGE,
    TRACED_VALUE_INPUT,
    StrategyTable,
    candidates_in_order,
)
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import COMPLEX_TENSORS_NOTE, ProblemReason
from fixport.symbolics.library import (
    BRIDGE_TEMPLATE_ID,
    STUB_TEMPLATE_ID,
    TIER_EXACT_OPSET,
    TIER_EXACT_READY,
    TIER_GENERIC,
    RankedTemplate,
    TemplateLibrary,
    params_for,
    parse_template_source,
)

CUSTOM_DOMAIN_TEMPLATE_ID = "custom_domain.custom_op"  # in the TorchScript template library
INPUTS_AS_TRACED_TEMPLATE_ID = "standard.inputs_as_traced"  # only for a node without a kernel for its types


def _mapping(problem, offer: RankedTemplate, extra_params: dict | None = None) -> FixMapping:
    template = offer.template
    assert template is not None
    params = {**params_for(problem.kind, template.default_params()), **offer.extra_params, **(extra_params or {})}
    return FixMapping(target_kind=problem.kind, template_id=template.id, source=template.source, params=params,
                      python_op_name=problem.python_op_name or None, custom_opsets=dict(template.custom_opsets))


def _candidate(problem, offer: RankedTemplate, family: str) -> Candidate:
    """``offer`` as a candidate; its why says when the fix is built for the traced sizes."""
    specialised = offer.template is not None and offer.template.shape_specialised
    why = f"{offer.why} (shape-specialised: may hold only at the traced sizes)" if specialised else offer.why
    return Candidate(_mapping(problem, offer), family, why, shape_specialised=specialised)


def _synthesized(problem, opset: int) -> tuple[RankedTemplate | None, ...]:
    """The generated 1:1, decomposition (or, for a torch.library op, its Python code inlined) and
    materialisation offers (these import torch: worker only)."""
    if problem.python_op_name:
        return None, None, None
    from fixport.symbolics.synthesis.offers import (
        decomposition_offer,
        inlined_offer,
        materialised_offer,
        standard_op_offer,
    )

    if not problem.kind.startswith("aten::"):
        return None, inlined_offer(problem.kind, opset), None

    return (standard_op_offer(problem.kind, opset), decomposition_offer(problem.kind, opset),
            materialised_offer(problem.kind, opset))


def _rewritten_offers(problem, sample) -> list[RankedTemplate]:
    from fixport.core.exporters.torch_export.implementation_rewrite import rewritten_offers
    from fixport.symbolics.synthesis.rewritten_implementation import rewritten_inlined_template

    return rewritten_offers(problem.kind, sample, rewritten_inlined_template)


@dataclass
class _Offers:
    """What the TorchScript exporter prepared for one problem; each strategy takes its candidates from it."""

    problem: UnsupportedNode
    opset: int
    library: TemplateLibrary
    generic: list[RankedTemplate]
    as_traced: list[RankedTemplate]
    made_for_op: list[RankedTemplate]
    runnable: list[RankedTemplate]
    rewritten: list[RankedTemplate]
    standard: RankedTemplate | None = None
    decomposition: RankedTemplate | None = None
    materialised: RankedTemplate | None = None


def _prepared(problem: UnsupportedNode, opset: int, library: TemplateLibrary, sample) -> _Offers:
    offers = [o for o in library.templates_for(problem.kind, opset, problem.python_op_name or None)
              if o.template is not None and o.template_id != STUB_TEMPLATE_ID and o.template.opset_ok(opset)]
    standard, decomposition, materialised = _synthesized(problem, opset)
    generic = [o for o in offers if "*" in o.template.fits and o.template_id != INPUTS_AS_TRACED_TEMPLATE_ID]
    as_traced = [o for o in offers if o.template_id == INPUTS_AS_TRACED_TEMPLATE_ID and problem.kernel_gap]
    if COMPLEX_TENSORS_NOTE in problem.message:  # generated and generic fixes ignore the (real, imag) axis
        standard, decomposition, materialised, generic = None, None, None, []
    made_for_op = [o for o in offers if o not in generic and o.tier < TIER_EXACT_OPSET]
    runnable = [o for o in made_for_op if o.template.runs_in_onnxruntime]
    return _Offers(problem, opset, library, generic, as_traced, made_for_op, runnable,
                   _rewritten_offers(problem, sample), standard, decomposition, materialised)


def _kernel_types(offers: _Offers) -> list[Candidate]:
    gap = offers.problem.kernel_gap
    return [_candidate(offers.problem, replace(o, why=f"torch's symbolic with the inputs cast to torch's own dtypes "
                                                      f"(ONNX Runtime has no kernel for {gap})"),
                       FAMILY_KERNEL_TYPES) for o in offers.as_traced]


def _standard_op(offers: _Offers) -> list[Candidate]:
    return [] if offers.standard is None else [_candidate(offers.problem, offers.standard, FAMILY_STANDARD_OP)]


def _hand_written(offers: _Offers) -> list[Candidate]:
    return [_candidate(offers.problem, o, FAMILY_HAND_WRITTEN) for o in offers.runnable
            if not o.template.shape_specialised]


def _torchlib_bridge(offers: _Offers) -> list[Candidate]:
    return [_candidate(offers.problem, o, FAMILY_BRIDGE)
            for o in offers.generic if o.template_id == BRIDGE_TEMPLATE_ID and o.tier < TIER_GENERIC]


def _hand_written_at_traced_sizes(offers: _Offers) -> list[Candidate]:
    return [_candidate(offers.problem, o, FAMILY_HAND_WRITTEN) for o in offers.runnable
            if o.template.shape_specialised]


def _decomposition(offers: _Offers) -> list[Candidate]:
    """torch's decomposition of an aten op, replayed through the exporter's symbolics."""
    if offers.decomposition is None or not offers.problem.kind.startswith("aten::"):
        return []
    return [_candidate(offers.problem, offers.decomposition, FAMILY_DECOMPOSITION)]


def _inlined(offers: _Offers) -> list[Candidate]:
    """A torch.library op's own Python implementation, inlined (the generated decomposition offer of a non-aten op)."""
    if offers.decomposition is None or offers.problem.kind.startswith("aten::"):
        return []
    return [_candidate(offers.problem, offers.decomposition, FAMILY_INLINED)]


def _rewritten_implementation(offers: _Offers) -> list[Candidate]:
    return [_candidate(offers.problem, o, FAMILY_INLINED) for o in offers.rewritten]  # a torch.library op only


def _materialised(offers: _Offers) -> list[Candidate]:
    return [] if offers.materialised is None else [_candidate(offers.problem, offers.materialised,
                                                              FAMILY_MATERIALISED)]


def _generic(offers: _Offers) -> list[Candidate]:
    return [_candidate(offers.problem, o, FAMILY_GENERIC) for o in offers.generic
            if o.template.runs_in_onnxruntime and o.template_id != BRIDGE_TEMPLATE_ID]


def _hand_written_custom_runtime(offers: _Offers) -> list[Candidate]:
    return [Candidate(_mapping(offers.problem, o), FAMILY_HAND_WRITTEN, o.why, runs_in_onnxruntime=False)
            for o in offers.made_for_op if not o.template.runs_in_onnxruntime]


def _custom_domain(offers: _Offers) -> list[Candidate]:
    problem, library = offers.problem, offers.library
    if CUSTOM_DOMAIN_TEMPLATE_ID not in library:
        return []
    custom = next(o for o in library.templates_for(problem.kind, offers.opset)
                  if o.template_id == CUSTOM_DOMAIN_TEMPLATE_ID)
    params = custom_domain_params(problem.kind, problem.python_op_name)
    return [Candidate(_mapping(problem, custom, params), FAMILY_CUSTOM_DOMAIN, CUSTOM_DOMAIN_WHY,
                      runs_in_onnxruntime=False)]


def traced_value_offers(kind: str) -> list[RankedTemplate]:
    """The fix that keeps a scale factor read from an input (``float(scale)``) an input of ``kind``'s resize."""
    from fixport.symbolics.synthesis.runtime_scale import RESIZE_KINDS, runtime_scale_template

    if kind not in RESIZE_KINDS:
        return []
    info = parse_template_source(runtime_scale_template(), f"<generated for {kind}>")
    return [RankedTemplate(info.id, TIER_EXACT_READY, "the resize as a generated autograd.Function whose symbolic "
                           "passes the runtime scale to Resize: the scale stays an input", info)]


def _traced_value_input(offers: _Offers) -> list[Candidate]:
    problem = offers.problem
    if problem.reason != ProblemReason.BAKED_INPUT:
        return []
    where = f" at {problem.source}" if problem.source else ""
    return [Candidate(_mapping(problem, o), FAMILY_TRACED_VALUE_INPUT, f"{o.why} ({problem.kind}{where} traced as "
                      "RuntimeScaleResize)") for o in traced_value_offers(problem.kind)]


def _traced_size_change(offers: _Offers) -> list[Candidate]:
    """The lines where the trace folded a size, changed while the model is traced
    (:mod:`fixport.core.exporters.traced_size_changes`)."""
    problem = offers.problem
    if problem.reason != ProblemReason.SHAPE_SPECIALISED or not problem.code_change_fix:
        return []
    mapping = FixMapping(target_kind=problem.kind, template_id=TRACED_CODE_CHANGE_TEMPLATE_ID,
                         source=problem.code_change_fix)
    description = parse_template_source(problem.code_change_fix).description.rstrip(".")
    return [Candidate(mapping, FAMILY_TRACED_SIZE_CHANGE, f"{description[0].lower()}{description[1:]} (the diff is "
                      "in the fix's source; the check runs the export at the declared other sizes too)")]


# The strategies of FIX_STRATEGIES but two: the TorchScript exporter declines the rewrite of a captured FX
# graph (its graph is TorchScript's, and torch.onnx runs no pass over an FX graph for it) and the
# capture's code change (a trace never stops on a tensor's value: it records the branch taken, and the
# check at other values says so).
STRATEGIES: StrategyTable[_Offers] = {
    TRACED_VALUE_INPUT: _traced_value_input,
    TRACED_SIZE_CHANGE: _traced_size_change,
    KERNEL_TYPES: _kernel_types,
    STANDARD_OP: _standard_op,
    HAND_WRITTEN: _hand_written,
    TORCHLIB_BRIDGE: _torchlib_bridge,
    HAND_WRITTEN_AT_TRACED_SIZES: _hand_written_at_traced_sizes,
    DECOMPOSITION: _decomposition,
    INLINED: _inlined,
    REWRITTEN_IMPLEMENTATION: _rewritten_implementation,
    MATERIALISED: _materialised,
    GENERIC: _generic,
    HAND_WRITTEN_CUSTOM_RUNTIME: _hand_written_custom_runtime,
    CUSTOM_DOMAIN: _custom_domain,
}


def candidates_for(problem: UnsupportedNode, opset: int, library: TemplateLibrary, allow_custom: bool,
                   sample=None) -> list[Candidate]:
    """Every fix worth trying for ``problem`` at ``opset``, in the order of
    :data:`~fixport.core.records.fix_strategies.FIX_STRATEGIES`; ``sample``: the node's values, for
    the fixes made from them."""
    if problem.reason == ProblemReason.BAKED_INPUT:  # a constant the trace made: no conversion changes it
        return _traced_value_input(_Offers(problem, opset, library, [], [], [], [], []))
    if problem.reason == ProblemReason.SHAPE_SPECIALISED:  # a size the trace folded: only its line's change
        return _traced_size_change(_Offers(problem, opset, library, [], [], [], [], []))
    return candidates_in_order(STRATEGIES, _prepared(problem, opset, library, sample), allow_custom)


def opset_that_fixes(problem, opset: int, library: TemplateLibrary) -> int | None:
    """The lowest opset above ``opset`` where torch or a runnable built-in template handles
    ``problem``'s kind; None when no opset does."""
    candidates = []
    if problem.first_supported_opset and problem.first_supported_opset > opset and problem.reason == "no_symbolic":
        candidates.append(problem.first_supported_opset)
    if problem.opset_advice and problem.opset_advice > opset:  # e.g. "... Please try opset version 11."
        candidates.append(problem.opset_advice)
    if problem.reason == "runtime_error" and (runs := opset_that_runs(problem.message, opset)) is not None:
        candidates.append(runs)  # e.g. Equal on floats from opset 11
    for offer in library.templates_for(problem.kind, opset, problem.python_op_name or None):
        template = offer.template
        if template is not None and template.runs_in_onnxruntime and template.min_opset > opset \
                and "*" not in template.fits:
            candidates.append(template.min_opset)
    return min(candidates) if candidates else None
