"""What torch knows about an op kind, for the Inspector: schemas and built-in symbolic opsets."""
from __future__ import annotations

from fixport.core.exporters.choice import exporter_for
from fixport.core.exporters.profiles import profile_for_kind
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.records.requests import OpInfoRequest
from fixport.core.words.cancel import CancelCallback, ProgressCallback


def op_info(request: OpInfoRequest, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> OpInfo:
    """Torch's schemas and built-in symbolic opsets for the Inspector, asked of the exporter whose
    graphs spell op kinds like this one."""
    return exporter_for(profile_for_kind(request.kind).name).op_info(request.kind)
