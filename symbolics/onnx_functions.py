"""Fixes written once, as ONNX functions, for both exporters.

A shared template (``symbolics/shared/``, family ``onnx_function``) defines its ``symbolic`` as an
onnxscript function in trace mode (``op.TopK(...)``), taking the op's ATen arguments in schema
order, and decorates it with :func:`for_both_exporters`. The dynamo exporter registers it as it
is (``custom_translation_table``); the TorchScript exporter calls it with a graph context first,
and the function is then recorded and re-emitted into that graph as standard ONNX nodes by the
torch_lib bridge, at the export's opset.
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


def for_both_exporters(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` for the dynamo exporter (its signature and annotations kept, which the
    exporter reads), and for the TorchScript exporter when called as ``symbolic(g, *args)``."""

    @functools.wraps(function)
    def symbolic(*args: Any, **kwargs: Any) -> Any:
        if args and _is_graph_context(args[0]):
            from fixport.symbolics.torchlib_bridge import emit_onnx_function

            return emit_onnx_function(args[0], args[1:], function)
        return function(*args, **kwargs)

    setattr(symbolic, SHARED_MARK, True)
    return symbolic
