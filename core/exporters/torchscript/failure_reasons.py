"""Which of the TorchScript exporter's failure modes a conversion failure is."""
from __future__ import annotations

from fixport.core.exporters.torchscript.conversion_hooks import ConversionFailure
from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.vocabulary import OPSET_DEPENDENT_REASONS, PYTHON_OP_KIND, ProblemReason

# Namespaces whose ops the exporter itself knows; anything else is a custom op.
EXPORTER_NAMESPACES = frozenset({"aten", "prim", "onnx", "quantized", "_caffe2"})

def classify_failure(failure: ConversionFailure, first_supported: int | None) -> UnsupportedNode:
    """Reason for a conversion failure: which of the exporter's failure modes it is."""
    namespace = failure.kind.split("::", 1)[0]
    if failure.kind == PYTHON_OP_KIND:
        reason = ProblemReason.PYTHON_OP
    elif namespace not in EXPORTER_NAMESPACES:
        reason = ProblemReason.CUSTOM_OP
    elif failure.exception_type == "UnsupportedOperatorError":
        reason = ProblemReason.NO_SYMBOLIC
    else:
        reason = ProblemReason.SYMBOLIC_REJECTED
    message = failure.message
    if reason == ProblemReason.PYTHON_OP:
        message = (f"autograd.Function {failure.python_op_name or '?'} has no `symbolic` and was not inlined "
                   "(export with autograd inlining on, or fix it by its name; a fix for any Function or for one "
                   f"node registers a prim::PythonOp symbolic, which stops torch inlining the others). {message}")
    return UnsupportedNode(
        kind=failure.kind, instance=failure.instance, reason=reason, message=message,
        scope=failure.scope, source=failure.source,
        first_supported_opset=first_supported if reason in OPSET_DEPENDENT_REASONS else None,
        python_op_name=failure.python_op_name)
