"""The window's generated offers and schema stubs, from the project's exporter."""
from __future__ import annotations

from fixport.core.exporters.choice import exporter_for
from fixport.core.loaders.model_cache import open_model
from fixport.core.records.requests import StubRequest, SynthesizeRequest
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled
from fixport.symbolics.library import RankedTemplate


def generated_offers(request: SynthesizeRequest, progress: ProgressCallback | None = None,
                     cancelled: CancelCallback | None = None) -> list[RankedTemplate]:
    """The synthesize job: fixes the exporter generates for ``request.kind``, best first."""
    check_cancelled(cancelled)
    return exporter_for(request.exporter).generated_offers(request.kind, request.opset, cancelled)


def stub(request: StubRequest, progress: ProgressCallback | None = None,
         cancelled: CancelCallback | None = None) -> str:
    """The stub job: a starting fix from the op's schema, in the exporter's fix language."""
    if request.model is not None:
        open_model(request.model)  # an autograd.Function or custom op is known once its module ran
    return exporter_for(request.exporter).stub(request)
