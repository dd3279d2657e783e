"""Which ONNX nodes ONNX Runtime will refuse for the types they are given: no CPU kernel takes
them, or the op's ONNX schema does not.

ONNX Runtime refuses such a model only when it creates a session, naming the first node it cannot
place; a model that does not export whole yet cannot get that far. Reading ONNX Runtime's own
kernel table against the types the export inferred names every such node at once (a bool
``CumSum`` behind an op the exporter rejected, say), so a diagnosis lists it with the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import onnx
from onnx import helper

from fixport.core.onnx_io.kernel_table import cpu_kernel_rows
from fixport.core.words.graph import Graph, Node

STANDARD_DOMAINS = frozenset({"", "onnx", "ai.onnx"})
# numpy's names (the neutral graph's dtypes) in ONNX Runtime's type strings.
ORT_TYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16", "bool": "bool",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "complex64": "complex64", "complex128": "complex128", "object": "string",
}
# Half-precision values run where float does on CPU: ONNX Runtime casts float16 around kernels that
# lack it, and Fixport runs bfloat16 models widened (bfloat16_runs).
RUNS_AS_FLOAT = frozenset({"float16", "bfloat16"})


@dataclass(frozen=True)
class _Kernel:
    first_version: int
    last_version: int
    types: dict[str, frozenset[str]]  # type constraint -> the types this kernel takes


@dataclass(frozen=True)
class KernelGap:
    """A node ONNX Runtime will refuse at these types (no CPU kernel takes them, or the op's ONNX
    schema does not), and what it would take."""

    node: Node
    given: str  # "T=bool"
    accepted: str  # "T: float, double, int32, int64"
    schema_version: int | None = None  # set where the op's ONNX schema itself takes no such type
    refused_types: frozenset[str] = frozenset()  # the given types refused, in ONNX Runtime's names ("double")

    def lacking(self) -> str:
        """What is missing: 'ONNX Runtime's CPU provider has no GridSample kernel for T2=double (it takes ...)'."""
        if self.schema_version is not None:
            lacking = f"ONNX's {self.node.op_type}-{self.schema_version} does not take {self.given}"
        else:
            lacking = f"ONNX Runtime's CPU provider has no {self.node.op_type} kernel for {self.given}"
        return f"{lacking} (it takes {self.accepted})"

    def message(self) -> str:
        return f"{self.lacking()}; ONNX Runtime will refuse the model once the rest exports."


@cache
def _cpu_kernels() -> dict[str, list[_Kernel]]:
    """The CPU provider's kernels of the standard domain, by op type (empty where this ONNX Runtime
    build cannot tell: kernel_table.py)."""
    kernels: dict[str, list[_Kernel]] = {}
    for op_name, domain, (first, last), constraints in cpu_kernel_rows():
        if domain not in STANDARD_DOMAINS:
            continue
        types = {name: frozenset(_type_name(t) for t in allowed) for name, allowed in constraints.items()}
        kernels.setdefault(op_name, []).append(_Kernel(first, last, types))
    return kernels


@cache
def op_schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The standard-domain op's schema in force at ``opset``; None where ONNX has no such op yet."""
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None


def inferred_dtypes(model: onnx.ModelProto) -> dict[str, str]:
    """Every value's element type (numpy's name) by ONNX's type inference, on a copy of the graph
    without its weights: an export that holds an op the exporter rejected leaves the values after
    it untyped."""
    graph = model.graph
    weights = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in graph.initializer]
    light = helper.make_graph(graph.node, graph.name, [*graph.input, *weights], graph.output,
                              value_info=graph.value_info)
    copy = helper.make_model(light, opset_imports=model.opset_import, functions=model.functions,
                             ir_version=model.ir_version)
    try:
        inferred = onnx.shape_inference.infer_shapes(copy, check_type=False, strict_mode=False).graph
    except (onnx.shape_inference.InferenceError, ValueError):
        return {}
    dtypes = {}
    for info in [*inferred.input, *inferred.output, *inferred.value_info]:
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            dtypes[info.name] = helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type).name
    return dtypes


def _given_types(node: Node, schema: onnx.defs.OpSchema, dtypes: dict[str, str]) -> dict[str, set[str]]:
    """Each type constraint of the schema -> the known types of the node's values bound to it."""
    given: dict[str, set[str]] = {}
    for names, parameters in ((node.inputs, schema.inputs), (node.outputs, schema.outputs)):
        for index, name in enumerate(names):
            if not name or not parameters:
                continue
            parameter = parameters[min(index, len(parameters) - 1)]  # a variadic last parameter takes the rest
            if index >= len(parameters) and parameter.option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
                continue
            dtype = ORT_TYPE_NAMES.get(dtypes.get(name, ""))
            if dtype is not None:
                given.setdefault(parameter.type_str, set()).add(dtype)
    return given


def _type_name(ort_type: str) -> str:
    """'tensor(bool)' -> 'bool'."""
    return ort_type.removeprefix("tensor(").removesuffix(")")


def _allowed(dtype: str, allowed: frozenset[str] | None, widened: bool = True) -> bool:
    return allowed is None or dtype in allowed or (widened and dtype in RUNS_AS_FLOAT and "float" in allowed)


def _takes(kernel: _Kernel, given: dict[str, set[str]], widened: bool = True) -> bool:
    """Whether ``kernel`` takes every given type (half precision as float where ``widened``)."""
    return all(_allowed(dtype, kernel.types.get(constraint), widened) for constraint, types in given.items()
               for dtype in types)


def _as_kernel(schema: onnx.defs.OpSchema) -> _Kernel:
    """The schema's type constraints, in a kernel's form."""
    return _Kernel(schema.since_version, schema.since_version, {
        constraint.type_param_str: frozenset(_type_name(t) for t in constraint.allowed_type_strs)
        for constraint in schema.type_constraints})


def schema_takes(schema: onnx.defs.OpSchema, given: dict[str, set[str]]) -> bool:
    """Whether the op's schema takes these types ({"T": {"float"}}), as ONNX's type check reads it."""
    return _takes(_as_kernel(schema), given, widened=False)


def _gap(node: Node, given: dict[str, set[str]], kernels: list[_Kernel], widened: bool = True) -> KernelGap:
    """The constraints no kernel takes the node's types for (all of them, where only the mix fails)."""
    def refused(constraint: str) -> bool:
        return any(not any(_allowed(dtype, k.types.get(constraint), widened) for k in kernels)
                   for dtype in given[constraint])

    constrained = sorted(c for c in given if any(c in k.types for k in kernels))
    named = [c for c in constrained if refused(c)] or constrained
    return KernelGap(
        node,
        ", ".join(f"{c}={'/'.join(sorted(given[c]))}" for c in named),
        "; ".join(f"{c}: {', '.join(sorted({t for k in kernels for t in k.types.get(c, ())}))}" for c in named),
        refused_types=frozenset(t for c in named for t in given[c]))


def _inlined(schema: onnx.defs.OpSchema, opset: int) -> bool:
    """Whether ONNX Runtime runs the op's function body where no kernel takes its types: the schema
    has one written for this opset or an earlier one (Elu's, written for opset 18, is not used at 17)."""
    versions = [*schema.function_opset_versions, *schema.context_dependent_function_opset_versions]
    return any(version <= opset for version in versions)


def kernel_gaps(graph: Graph, model: onnx.ModelProto) -> list[KernelGap]:
    """Nodes of ``graph`` (``model``'s, in the neutral form) of the standard domain whose types the
    op's ONNX schema refuses, or that the CPU provider has kernels for at the model's opset but none
    at the node's types (and no function body to run instead). Ops with no kernel at all and values
    of unknown type are left to ONNX Runtime's own run."""
    kernels = _cpu_kernels()
    opset = next((o.version for o in model.opset_import if o.domain in STANDARD_DOMAINS), None)
    if not kernels or opset is None:
        return []
    dtypes = {name: value.dtype for name, value in graph.values.items() if value.dtype}
    if any(name and name not in dtypes for node in graph.nodes for name in node.inputs):
        dtypes = {**inferred_dtypes(model), **dtypes}
    gaps = []
    for node in graph.nodes:
        if node.unsupported or node.domain not in STANDARD_DOMAINS:
            continue
        schema = op_schema(node.op_type, opset)
        if schema is None:
            continue
        given = _given_types(node, schema, dtypes)
        if any(len(types) > 1 for types in given.values()):
            continue  # types ONNX would refuse as they are: guessed for a placeholder's outputs, not what will run
        if not schema_takes(schema, given):  # ONNX's own type check refuses the graph
            gaps.append(replace(_gap(node, given, [_as_kernel(schema)], widened=False),
                                schema_version=schema.since_version))
            continue
        candidates = [k for k in kernels.get(node.op_type, ())
                      if k.first_version <= schema.since_version <= k.last_version]
        if candidates and not any(_takes(kernel, given) for kernel in candidates) and not _inlined(schema, opset):
            gaps.append(_gap(node, given, candidates))
    return gaps
