"""The public template API: the one Fixport module a template imports.

A hand-written fix is one file holding one function named ``symbolic`` under :func:`fix` (imported
from this module), which carries the template's metadata as torch_lib's ``@torch_op`` carries an
op's name::

    @fix("aten::selu.default", id="decompose.selu", strategy="decompose", title="SELU via Relu/Exp",
         description="...", min_opset=7)
    def symbolic(self):
        ...

By default ``symbolic`` is an onnxscript function in trace mode taking the op's ATen arguments in
schema order, and both exporters register it (see :mod:`fixport.symbolics.onnx_functions`). A fix
only TorchScript can express (``g.op`` on a custom domain, an ``autograd.Function``'s PythonOp)
says why in ``torchscript_only="..."`` and takes the graph context ``g`` first, as torch.onnx's
symbolics do; one only the dynamo exporter takes (a translation, a decomposition, a graph rewrite)
says why in ``dynamo_only="..."``. Fixport reads the decorator's arguments with ``ast`` (they must
be literals), so listing the library never imports a template.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fixport.symbolics.onnx_functions import for_both_exporters
from fixport.symbolics.onnx_nodes import custom_node
from fixport.symbolics.torchlib_bridge import emit_torchlib, torch_symbolic
from fixport.symbolics.traced_sizes import traced_int_list

# What a template may use besides the decorator: a custom-domain node in an ONNX function
# (custom_node); for TorchScript-only fixes, torch's own symbolic of the node (torch_symbolic),
# torch_lib's function replayed into the graph (emit_torchlib), ints read from the trace.
__all__ = ["custom_node", "default_params", "emit_torchlib", "fix", "for_both_exporters", "op_schema",
           "torch_symbolic", "traced_int_list"]

FIX_DECORATOR = "fix"  # the name the loader looks for above ``symbolic``
FIX_METADATA = "fixport_fix"  # set on the decorated function: the decorator's arguments


def fix(*fits: str, torchscript_only: str = "", dynamo_only: str = "", complex_inputs: bool = False,
        **metadata: Any) -> Callable[[Callable[..., Any]], Any]:
    """Mark ``symbolic`` as the fix for the ops ``fits``, with the template's metadata.

    Keywords: ``id``, ``title``, ``description``, ``strategy`` (the family it ranks in),
    ``min_opset``, and optionally ``max_opset``, ``params`` (the form's fields), ``notes``,
    ``runs_in_onnxruntime``, ``custom_opsets``, ``shape_specialised``, ``tolerance``
    (``(rtol, atol)`` the fix promises against torch), ``complex_inputs`` (the op on complex
    values) and ``torchscript_only`` (why only the TorchScript exporter can take it: ``symbolic`` is
    then a ``g.op`` symbolic, or what its family says) or ``dynamo_only`` (why only the dynamo
    exporter takes it: a translation, decomposition, graph rewrite or code change of its family).
    Either way ``symbolic`` is registered as it is written.
    """

    def decorate(function: Callable[..., Any]) -> Any:
        one_exporter = torchscript_only or dynamo_only
        registered = function if one_exporter else for_both_exporters(function, complex_inputs=complex_inputs)
        setattr(registered, FIX_METADATA, {"fits": list(fits), "torchscript_only": torchscript_only,
                                           "dynamo_only": dynamo_only, "complex_inputs": complex_inputs, **metadata})
        return registered

    return decorate


def default_params(symbolic: Callable[..., Any]) -> dict[str, Any]:
    """The defaults of the params a fix declares, for its module-level ``params`` (Fixport replaces
    them with the values set for the fix)."""
    specs = getattr(symbolic, FIX_METADATA, {}).get("params", {})
    return {name: spec.get("default") for name, spec in specs.items()}


def op_schema(kind: str) -> Any:
    """torch's schema of the op overload ``kind`` (``aten::pow.Tensor_Scalar``; no overload is
    ``.default``), or None where this process knows no such op."""
    import torch

    namespace, sep, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")._schema if sep else None
    except (AttributeError, RuntimeError):
        return None
