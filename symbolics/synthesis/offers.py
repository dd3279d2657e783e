"""Synthesized offers for one op kind, ranked beside the library's templates."""
from __future__ import annotations

from fixport.symbolics.library import TIER_EXACT_READY, RankedTemplate, parse_template_source
from fixport.symbolics.synthesis.decomposition import decomposition_template, inlined_implementation_template
from fixport.symbolics.synthesis.materialise import materialised_template
from fixport.symbolics.synthesis.standard_op import standard_op_template


def standard_op_offer(kind: str, opset: int) -> RankedTemplate | None:
    source = standard_op_template(kind, opset)
    if source is None:
        return None
    info = parse_template_source(source, f"<generated {kind}>")
    return RankedTemplate(info.id, TIER_EXACT_READY, f"the ONNX op of the same name, opset {info.min_opset}+", info)


def decomposition_offer(kind: str, opset: int, input_types: str = "") -> RankedTemplate | None:
    source = decomposition_template(kind, input_types)
    if source is None:
        return None
    info = parse_template_source(source, f"<generated {kind}>")
    return RankedTemplate(info.id, TIER_EXACT_READY, "torch's own decomposition, replayed with the "
                          "exporter's symbolics", info)


def materialised_offer(kind: str, opset: int, input_types: str = "") -> RankedTemplate | None:
    source = materialised_template(kind, input_types)
    if source is None:
        return None
    info = parse_template_source(source, f"<generated {kind}>")
    if not info.opset_ok(opset):
        return None
    return RankedTemplate(info.id, TIER_EXACT_READY, "a constant matrix computed by torch at the node's static "
                          "shapes (for ops linear in their inputs)", info)


def inlined_offer(kind: str, opset: int) -> RankedTemplate | None:
    """A torch.library custom op's own Python implementation, inlined (None for other ops)."""
    source = inlined_implementation_template(kind)
    if source is None:
        return None
    info = parse_template_source(source, f"<generated {kind}>")
    return RankedTemplate(info.id, TIER_EXACT_READY, "the custom op's own Python implementation, inlined "
                          "with the exporter's symbolics", info)
