"""One node of any domain, emitted while an ONNX function is traced: for fixes that write a
custom-domain node, and for the dynamo exporter's placeholders."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx

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
