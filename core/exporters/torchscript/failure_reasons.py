"""Which of the TorchScript exporter's failure modes a conversion failure is."""
from __future__ import annotations

import re

from fixport.core.exporters.torchscript.conversion_hooks import ConversionFailure
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import OPSET_DEPENDENT_REASONS, PYTHON_OP_KIND, ProblemReason

# TorchScript's advice in a rejecting symbolic: "... Please try opset version 11."
_OPSET_ADVICE_RE = re.compile(r"[Pp]lease try opset version (\d+)")

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
    first_supported = first_supported if reason in OPSET_DEPENDENT_REASONS else None
    return UnsupportedNode(
        kind=failure.kind, instance=failure.instance, reason=reason, message=message,
        scope=failure.scope, source=failure.source, first_supported_opset=first_supported,
        opset_advice=_opset_advice(reason, failure.message, first_supported),
        python_op_name=failure.python_op_name)


def _opset_advice(reason: ProblemReason, message: str, first_supported: int | None) -> int | None:
    """The opset TorchScript's exporter names for a failure: its symbolic's "Please try opset
    version N", or the first opset with a built-in symbolic for a kind it has none for."""
    if reason not in OPSET_DEPENDENT_REASONS:
        return None
    named = [int(v) for v in _OPSET_ADVICE_RE.findall(message)]
    if reason == ProblemReason.NO_SYMBOLIC and first_supported:
        named.append(first_supported)
    return min(named) if named else None
