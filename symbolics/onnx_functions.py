"""Fixes written once, as ONNX functions, for both exporters.

A shared template (family ``onnx_function``, filed by op namespace: ``symbolics/aten/``, ...)
defines its ``symbolic`` as an onnxscript function in trace mode (``op.TopK(...)``), taking the
op's ATen arguments in schema order, and decorates it with :func:`for_both_exporters`. The dynamo
exporter registers it as it is (``custom_translation_table``); the TorchScript exporter calls it
with a graph context first, and the function is then recorded and re-emitted into that graph as
standard ONNX nodes by the torch_lib bridge, at the export's opset.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

SHARED_FAMILY = "onnx_function"
SHARED_MARK = "fixport_for_both_exporters"  # set on the wrapper: its signature has no ``g``


def _is_graph_context(value: Any) -> bool:
    """The TorchScript exporter's first symbolic argument (``g``)."""
    return type(value).__name__ == "GraphContext" and hasattr(value, "original_node")


def for_both_exporters(function: Callable[..., Any] | None = None, *, complex_inputs: bool = False) -> Any:
    """``function`` for the dynamo exporter (its signature and annotations kept, which the
    exporter reads), and for the TorchScript exporter when called as ``symbolic(g, *args)``.

    ``complex_inputs``: the function is the op on complex values, carried as real tensors with a
    trailing (real, imag) axis. The dynamo exporter registers it for complex inputs only; the
    TorchScript exporter registers a fix for the whole op kind, so there a node without complex
    tensors is exported by torch's own symbolic, and a complex one gets its values in that layout.
    """
    if function is None:
        return functools.partial(for_both_exporters, complex_inputs=complex_inputs)
    chosen = function

    @functools.wraps(chosen)
    def symbolic(*args: Any, **kwargs: Any) -> Any:
        if args and _is_graph_context(args[0]):
            from fixport.symbolics.torchlib_bridge import emit_onnx_function, takes_complex_tensors, torch_symbolic

            g = args[0]
            if complex_inputs and not takes_complex_tensors(g):
                return torch_symbolic(g)(g, *args[1:])
            return emit_onnx_function(g, args[1:], chosen, complex_layout=complex_inputs)
        return chosen(*args, **kwargs)

    setattr(symbolic, SHARED_MARK, True)
    return symbolic
