"""1:1 standard op, found by itself: an ATen op whose ONNX namesake has the same tensor inputs.

``aten::cosh(Tensor self) -> Tensor`` and ONNX ``Cosh(input) -> output`` share a name (modulo
case and underscores), take the same number of tensors, and the ATen overload has no other
argument, so the node maps to one ``g.op``. ``fix --auto`` still checks the result against torch.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from functools import lru_cache

import onnx.defs
import torch

from fixport.core.project.template_form import fix_decorator

STANDARD_OP_FAMILY = "standard_op"


@dataclass(frozen=True)
class StandardOpMatch:
    """An ATen overload and the ONNX op that computes the same thing."""

    kind: str
    aten_schema: str
    onnx_op: str
    onnx_since: int
    argument_names: tuple[str, ...]
    outputs: int


@lru_cache(maxsize=8)
def _onnx_ops_by_folded_name(opset: int) -> dict[str, onnx.defs.OpSchema]:
    found: dict[str, onnx.defs.OpSchema] = {}
    for schema in onnx.defs.get_all_schemas():
        if schema.domain not in ("", "ai.onnx") or schema.deprecated:
            continue
        try:
            found[schema.name.lower()] = onnx.defs.get_schema(schema.name, opset, "")
        except onnx.defs.SchemaError:  # newer than the opset
            continue
    return found


def _input_range(schema: onnx.defs.OpSchema) -> tuple[int, int]:
    return schema.min_input, schema.max_input


def find_standard_op(kind: str, opset: int, overload_name: str | None = None) -> StandardOpMatch | None:
    """The ONNX op at ``opset`` that ``kind`` maps to 1:1, or None; ``overload_name``: only that
    overload of it ('' for ``default``), else the first that fits."""
    namespace, _, name = kind.partition("::")
    if namespace != "aten":
        return None
    schema = _onnx_ops_by_folded_name(opset).get(name.strip("_").replace("_", "").lower())
    if schema is None:
        return None
    low, high = _input_range(schema)
    try:
        overloads = torch._C._jit_get_schemas_for_operator(kind)
    except RuntimeError:
        return None
    for overload in overloads:
        arguments = overload.arguments
        if any(a.is_out for a in arguments) or overload.name.endswith("_") or not arguments:
            continue
        if overload_name is not None and overload.overload_name != overload_name:
            continue
        if high > 2 * low and high > 1000 and len(arguments) < 2:
            continue  # a variadic ONNX op (Max, Sum) of one input is that input; aten::max(self) reduces it
        if any(str(a.type) != "Tensor" for a in arguments) or not low <= len(arguments) <= high:
            continue
        if not schema.min_output <= len(overload.returns) <= schema.max_output:
            continue
        if any(str(r.type) != "Tensor" for r in overload.returns):
            continue  # aten::size -> int[] is no Size, aten::equal -> bool no elementwise Equal
        names = tuple(a.name if a.name.isidentifier() and not keyword.iskeyword(a.name) else f"input_{i}"
                      for i, a in enumerate(arguments))
        return StandardOpMatch(kind, str(overload), schema.name, schema.since_version, names, len(overload.returns))
    return None


def overload_arities(kind: str) -> dict[str, int]:
    """Each overload of ``kind`` a traced graph can hold (not the ``out=`` ones), by its name
    (``default`` for the unnamed one), with its argument count: what a TorchScript symbolic, one
    for every overload of the kind, is called with besides ``g``."""
    try:
        overloads = torch._C._jit_get_schemas_for_operator(kind)
    except RuntimeError:
        return {}
    return {overload.overload_name or "default": len(overload.arguments) for overload in overloads
            if not any(a.is_out for a in overload.arguments)}


def _symbolic_source(kind: str, match: StandardOpMatch) -> str:
    """``def symbolic``: the inputs by name where every overload of ``kind`` has as many arguments as the
    one matched; else it takes any count and refuses, naming the overload, the ones it does not map
    (TorchScript gives all of a kind's overloads one symbolic: ``aten::squeeze`` and ``squeeze.dim``)."""
    arguments = ", ".join(match.argument_names)
    outputs = f", outputs={match.outputs}" if match.outputs > 1 else ""
    emit = f'g.op("{match.onnx_op}", {arguments}{outputs})'
    count = len(match.argument_names)
    others = sorted(f"{kind}.{name}" for name, arity in overload_arities(kind).items() if arity != count)
    if not others:
        return f"def symbolic(g, {arguments}):\n    return {emit}\n"
    unpack = f"{arguments}," if count == 1 else arguments
    refusal = (f"this template maps only {match.aten_schema} ({count} input(s)) to {match.onnx_op}; the node "
               f"has {{len(inputs)}}: another overload ({', '.join(others)}). Pick another fix for it.")
    return (f"def symbolic(g, *inputs):\n"
            f"    # TorchScript calls this for every overload of {kind}; only one maps 1:1 to {match.onnx_op}.\n"
            f"    if len(inputs) != {count}:\n"
            f"        raise ValueError(f{refusal!r})\n"
            f"    {unpack} = inputs\n"
            f"    return {emit}\n")


def standard_op_template(kind: str, opset: int) -> str | None:
    """Template source emitting ``kind`` as its ONNX namesake, or None when there is none."""
    match = find_standard_op(kind, opset)
    if match is None:
        return None
    name = kind.partition("::")[2]
    marked = fix_decorator({**_standard_op_meta(kind, name, match), "family": STANDARD_OP_FAMILY,
                            "min_opset": match.onnx_since}, only="torchscript", why="a g.op symbolic")
    return f'''"""{kind} as the standard ONNX op {match.onnx_op}, found by Fixport (generated).

ATen: {match.aten_schema}
ONNX: {match.onnx_op} (version {match.onnx_since}, in opset {match.onnx_since}+)
Same name and the same tensor inputs, no other argument: the node maps to one {match.onnx_op}.
Edit it and save it as your own template to change it.
"""

from fixport.symbolics.api import fix


{marked}{_symbolic_source(kind, match)}'''


def _standard_op_meta(kind: str, name: str, match: StandardOpMatch) -> dict:
    return {"id": f"synthesized.standard_op.{name}", "title": f"{match.onnx_op} (the ONNX op of the same name)",
            "description": f"Emit {kind} as the standard ONNX op {match.onnx_op}, found by name and inputs.",
            "fits": [kind], "notes": "Generated by Fixport from the ATen schema and onnx.defs."}


def standard_op_function_template(kind: str) -> str | None:
    """Dynamo template source: ``kind`` (an op overload, ``aten::cosh.default``) as an onnxscript
    function calling its ONNX namesake, or None when there is none."""
    base, _, overload = kind.partition(".")
    match = find_standard_op(base, 18, "" if overload in ("", "default") else overload)
    if match is None:
        return None
    opset = max(18, match.onnx_since)
    name = base.partition("::")[2]
    arguments = ", ".join(match.argument_names)
    marked = fix_decorator({**_standard_op_meta(kind, name, match), "family": "dynamo_translation",
                            "min_opset": opset}, only="dynamo",
                           why="an ONNX function for the dynamo exporter's translation table")
    return f'''"""{kind} as the standard ONNX op {match.onnx_op}, found by Fixport (generated).

ATen: {match.aten_schema}
ONNX: {match.onnx_op} (version {match.onnx_since}, in opset {match.onnx_since}+)
Same name and the same tensor inputs, no other argument: the node maps to one {match.onnx_op}.
"""
from onnxscript.onnx_opset import opset{opset} as op

from fixport.symbolics.api import fix


{marked}def symbolic({arguments}):
    return op.{match.onnx_op}({arguments})
'''
