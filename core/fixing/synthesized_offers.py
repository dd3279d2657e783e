"""The synthesize job: fixes generated for the op kind at hand, for the window's Template dock.

The same families `fix --auto` tries first (symbolics/synthesis/): the ONNX op of the same name,
torch's own decomposition replayed through the exporter's symbolics, and the constant matrix of
an op linear in its inputs at static shapes; for a ``torch.library`` op written in torch ops, its
own Python implementation inlined. Each offer carries an
ordinary template source the user can read, edit and apply.
"""
from __future__ import annotations

from fixport.core.model.cancel import CancelCallback, ProgressCallback, check_cancelled
from fixport.core.model.requests import SynthesizeRequest
from fixport.symbolics.library import RankedTemplate
from fixport.symbolics.synthesis.offers import (
    decomposition_offer,
    inlined_offer,
    materialised_offer,
    standard_op_offer,
)


def synthesized_offers(request: SynthesizeRequest, progress: ProgressCallback | None = None,
                       cancelled: CancelCallback | None = None) -> list[RankedTemplate]:
    """Offers for ``request.kind``, best first; none when nothing can be generated for it."""
    offers = []
    for make in (standard_op_offer, decomposition_offer, inlined_offer, materialised_offer):
        check_cancelled(cancelled)
        try:
            offer = make(request.kind, request.opset)
        except Exception:  # a kind torch or ONNX cannot describe: nothing to generate from
            offer = None
        if offer is not None:
            offers.append(offer)
    return offers
