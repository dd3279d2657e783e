"""The opset an ONNX op that ONNX Runtime refused needs, read from ONNX Runtime's own message.

The dynamo exporter writes torch_lib's functions at opset 18 and converts them to the opset asked.
Three refusals are about the opset, not the op: an op that does not exist yet at the model's opset
("No Op registered for DeformConv with domain_version of 18": ONNX added it in 19), an
attribute the op gained later that the conversion left in ("Unrecognized attribute: num_outputs
for operator Split": Split has it from 18), and types the op takes only from a later opset on
(kernel_types: "ONNX's Equal-7 does not take T=float": Equal takes float from 11). Raising the
opset to where ``onnx.defs`` has it is the fix.
"""
from __future__ import annotations

import re

from fixport.core.onnx_io.kernel_types import op_schema, schema_takes

NEWEST_OPSET = 21  # the newest opset the dynamo route raises to (ONNX Runtime 1.2x runs it)
_NO_OP_RE = re.compile(r"No Op registered for (\w+) with domain_version of (\d+)")
_ATTRIBUTE_RE = re.compile(r"Unrecognized attribute: (\w+) for operator (\w+)")
# kernel_types.KernelGap's words for a node whose types its schema refuses: "ONNX's Equal-7 does not take T=float"
_SCHEMA_TYPES_RE = re.compile(r"ONNX's (\w+)-\d+ does not take ((?:\w+=[\w/]+(?:, )?)+)")


def opset_that_runs(message: str, opset: int) -> int | None:
    """The lowest opset above ``opset`` at which the op ONNX Runtime refused in ``message`` exists,
    has the attribute it was given, or takes the types it was given; None when the message is about
    something else."""
    missing = _NO_OP_RE.search(message)
    if missing:
        op_type, floor = missing[1], max(opset, int(missing[2]))
        return next((v for v in range(floor + 1, NEWEST_OPSET + 1) if op_schema(op_type, v) is not None), None)
    attribute = _ATTRIBUTE_RE.search(message)
    if attribute:
        name, op_type = attribute[1], attribute[2]
        return next((v for v in range(opset + 1, NEWEST_OPSET + 1)
                     if (schema := op_schema(op_type, v)) is not None and name in schema.attributes), None)
    types = _SCHEMA_TYPES_RE.search(message)
    if types:
        given = {name: set(dtypes.split("/")) for name, dtypes in (pair.split("=") for pair in types[2].split(", "))}
        return next((v for v in range(opset + 1, NEWEST_OPSET + 1)
                     if (schema := op_schema(types[1], v)) is not None and schema_takes(schema, given)), None)
    return None
