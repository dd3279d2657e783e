"""A placeholder ONNX graph while ops have no ONNX function, so the right pane shows the model.

Each op without a function is translated as one ``fixport::Unsupported`` node (with the op's
inputs and as many outputs as the FX node has); torch's translator then finishes the rest of the
graph as usual. The result is for looking at only: ONNX Runtime cannot run the placeholder.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import onnx
import torch

PLACEHOLDER_DOMAIN = "fixport"
PLACEHOLDER_OP = "Unsupported"
_ANY_TENSOR = [f"tensor({name})" for name in ("float", "double", "float16", "bfloat16", "int8", "int16", "int32",
                                                 "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                                                 "string", "complex64", "complex128")]


def custom_node(domain: str, op_type: str, inputs: Sequence[Any], outputs: int = 1, **attributes: Any) -> Any:
    """Emit one node of a custom domain while the dynamo exporter traces an ONNX function
    (onnxscript's Opset refuses ops it has no schema for; this builds one on the fly)."""
    from onnxscript import evaluator

    formal = onnx.defs.OpSchema.FormalParameter
    schema = onnx.defs.OpSchema(
        op_type, domain, 1,
        inputs=[formal(f"input_{i}", "T") for i in range(len(inputs))],
        outputs=[formal(f"output_{i}", "T") for i in range(outputs)],
        type_constraints=[("T", _ANY_TENSOR, "any tensor")],
        attributes=[onnx.defs.OpSchema.Attribute(name, _attribute_type(value), "")
                    for name, value in attributes.items()])
    return evaluator.default().eval(schema, list(inputs), attributes)


def _attribute_type(value: Any) -> onnx.defs.OpSchema.AttrType:
    types = onnx.defs.OpSchema.AttrType
    if isinstance(value, bool | int):
        return types.INT
    if isinstance(value, float):
        return types.FLOAT
    if isinstance(value, (list, tuple)):
        return types.FLOATS if any(isinstance(v, float) for v in value) else types.INTS
    return types.STRING


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
