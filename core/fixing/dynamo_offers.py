"""The window's generated offers and stubs for either exporter, told apart by the op kind.

An FX kind names an overload (``aten::pow.Tensor_Scalar``), a TorchScript kind does not
(``aten::pow``): the synthesize and stub jobs serve the dynamo exporter's ONNX functions for the
first, the TorchScript symbolics for the second.
"""
from __future__ import annotations

from fixport.core.fixing.auto_fix import stub
from fixport.core.fixing.synthesized_offers import synthesized_offers
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import CancelCallback, ProgressCallback, check_cancelled
from fixport.core.model.requests import StubRequest, SynthesizeRequest
from fixport.symbolics.dynamo.library import is_fx_kind
from fixport.symbolics.library import TIER_EXACT_READY, RankedTemplate, parse_template_source

GENERATED_WHY = {"dynamo.torchlib_start": "torch_lib's own ONNX function for this op, to edit",
                 "dynamo.stub": "an ONNX function skeleton from the op's schema"}


def dynamo_offers(kind: str) -> list[RankedTemplate]:
    """torch_lib's function as a starting point (when it has one), then the schema stub."""
    from fixport.symbolics.dynamo.offers import stub_offer, torchlib_offer

    offers = []
    for source in (torchlib_offer(kind), stub_offer(kind)):
        if source is not None:
            info = parse_template_source(source, f"<generated for {kind}>")
            offers.append(RankedTemplate(info.id, TIER_EXACT_READY, GENERATED_WHY[info.id], info))
    return offers


def offers_for_either_exporter(request: SynthesizeRequest, progress: ProgressCallback | None = None,
                               cancelled: CancelCallback | None = None) -> list[RankedTemplate]:
    """The synthesize job: dynamo offers for an FX kind, TorchScript's generated fixes otherwise."""
    if not is_fx_kind(request.kind):
        return synthesized_offers(request, progress, cancelled)
    check_cancelled(cancelled)
    return dynamo_offers(request.kind)


def stub_for_either_exporter(request: StubRequest, progress: ProgressCallback | None = None,
                             cancelled: CancelCallback | None = None) -> str:
    """The stub job: an ONNX function stub for an FX kind, a TorchScript symbolic stub otherwise."""
    if not is_fx_kind(request.kind):
        return stub(request, progress, cancelled)
    from fixport.symbolics.dynamo.offers import stub_offer

    if request.model is not None:
        open_model(request.model)  # a custom op's schema is known once its module ran
    return stub_offer(request.kind)
