"""A placeholder ONNX graph while ops have no ONNX function, so the right pane shows the model.

Each op without a function is translated as one ``fixport::Unsupported`` node (with the op's
inputs and as many outputs as the FX node has); torch's translator then finishes the rest of the
graph as usual. The result is for looking at only: ONNX Runtime cannot run the placeholder.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fixport.symbolics.onnx_nodes import custom_node

PLACEHOLDER_DOMAIN = "fixport"
PLACEHOLDER_OP = "Unsupported"


def placeholder_function(node: torch.fx.Node) -> Callable:
    """An ONNX function for ``node``'s op: one placeholder node with its tensor inputs."""
    value = node.meta.get("val")
    outputs = len(value) if isinstance(value, (list, tuple)) else 1
    kind = str(node.target)

    def placeholder(*args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if hasattr(a, "producer")]
        return custom_node(PLACEHOLDER_DOMAIN, PLACEHOLDER_OP, tensors, outputs, kind=kind)

    return placeholder


def register_placeholders(registry: Any, program: torch.export.ExportedProgram, missing: set[str]) -> None:
    """Register a placeholder for the op of every FX node named in ``missing``."""
    done: set[Any] = set()
    for node in program.graph.nodes:
        if node.name in missing and node.target not in done:
            registry.register_op(node.target, placeholder_function(node))
            done.add(node.target)
