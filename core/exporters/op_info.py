"""What torch knows about an op kind, for the Inspector: schemas and built-in symbolic opsets."""
from __future__ import annotations

from fixport.core.model.cancel import CancelCallback, ProgressCallback
from fixport.core.model.requests import OpInfoRequest
from fixport.core.onnx_io.op_docs import OpInfo


def torch_op_info(kind: str) -> OpInfo:
    """Schemas and built-in symbolic opsets for a TorchScript op kind (imports torch)."""
    import torch

    from fixport.core.exporters.profiles import names_op_overload
    from fixport.core.exporters.registry import builtin_opsets

    if names_op_overload(kind):  # an FX op overload (dynamo exporter): its one schema; no TorchScript symbolics
        from fixport.core.exporters.dynamo_fixes import op_overload
        from fixport.core.model.errors import TemplateValidationError

        try:
            return OpInfo(kind, [str(op_overload(kind)._schema)], [])
        except TemplateValidationError:
            return OpInfo(kind, [], [])
    try:
        schemas = [str(s) for s in torch._C._jit_get_schemas_for_operator(kind)]
    except RuntimeError:
        schemas = []
    return OpInfo(kind, schemas, builtin_opsets(kind))


def op_info(request: OpInfoRequest, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> OpInfo:
    """Torch's schemas and built-in symbolic opsets for the Inspector."""
    return torch_op_info(request.kind)
