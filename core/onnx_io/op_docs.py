"""Reference text for the Inspector: ONNX op schemas, and the torch facts the worker sends (OpInfo)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# g.op("Mul", ...) in a TorchScript symbolic, op.Mul(...) in an onnxscript function
_G_OP_RE = re.compile(r"""g\.op\(\s*["']([\w.\-]+::)?([A-Z]\w*)["']|\bop\.([A-Z]\w*)\(""")


@dataclass
class OpInfo:
    """What torch knows about one op kind (computed in the worker: it needs torch)."""

    kind: str
    schemas: list[str] = field(default_factory=list)
    builtin_opsets: list[int] = field(default_factory=list)


def onnx_ops_in_source(source: str) -> list[str]:
    """Standard ONNX ops a fix's source creates with g.op(...) or op.X(...), in order of appearance."""
    ops: list[str] = []
    for domain, g_op_type, function_op_type in _G_OP_RE.findall(source):
        op_type = g_op_type or function_op_type
        if not domain and op_type not in ops:
            ops.append(op_type)
    return ops


def onnx_schema_text(op_type: str, opset: int, domain: str = "") -> str:
    """A short description of an ONNX op at an opset, from onnx.defs ('' when unknown)."""
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:  # onnx raises SchemaError for unknown ops/opsets
        return ""
    inputs = ", ".join(f"{i.name}: {i.type_str}" for i in schema.inputs)
    outputs = ", ".join(f"{o.name}: {o.type_str}" for o in schema.outputs)
    attributes = ", ".join(sorted(schema.attributes))
    lines = [f"{op_type} (since opset {schema.since_version}): ({inputs}) -> ({outputs})"]
    if attributes:
        lines.append(f"attributes: {attributes}")
    return "\n".join(lines)
