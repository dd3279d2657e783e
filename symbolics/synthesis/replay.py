"""Decomposition replay: emit an ATen node as torch's own decomposition of it, at export time.

The node's op is traced with ``make_fx`` on tensors of the node's real shapes and dtypes and
its constant arguments, decomposing the op itself (``torch._decomp.decomposition_table`` or its
CompositeImplicitAutograd kernel) and every op inside that has no symbolic at the export's
opset. Each traced ATen call is then converted by the symbolic the exporter has registered for
it at that opset, the way the exporter's ``_run_symbolic_function`` does: tensors are the
values already in the graph, constants ``onnx::Constant``, lists ``prim::ListConstruct``,
None an empty ``prim::Constant``. A traced step that has no symbolic either raises
:class:`ReplayError` naming it.

Sizes: with static shapes they are baked in, and a size argument the graph computes is read from
the trace. Where the export declares dynamic dims, the decomposition is traced with those dims
(and the sizes computed from them) symbolic, and its size arithmetic becomes graph ops; where it
branches on a size, a :class:`ReplayConditionWarning` names the sizes the replay holds for
(see ``symbolic_sizes``). A decomposition that cannot be traced symbolically is folded at the
traced sizes, and the warning says so.

Self-contained (torch and Fixport's ``symbolic_sizes``): Fixport's fix script carries both files.
"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, registration, symbolic_helper

from fixport.symbolics.synthesis.symbolic_sizes import (
    as_number,
    emit_size_step,
    export_is_dynamic,
    is_size_step,
    size_conditions,
    symbol_names,
    symbolic_examples,
    traced_input_sizes,
    traced_value,
)


class ReplayError(RuntimeError):
    """The node cannot be replayed from torch's decomposition."""


class ReplayConditionWarning(UserWarning):
    """A replay under declared dynamic dims holds only for some sizes (or only the traced ones)."""


class StepFallback(Protocol):
    """Emits a traced step that has no symbolic (the decomposition template passes the torch_lib
    bridge's): ``handles(op)`` says whether it can, the call emits it from graph values for tensors
    and Python values for the rest, and returns the output values."""

    def handles(self, op: torch._ops.OpOverload) -> bool: ...

    def __call__(self, g, op: torch._ops.OpOverload, arguments: list) -> list: ...


def _node_schema(node: torch._C.Node, arity: int) -> torch._C.FunctionSchema:
    """The node's schema, or the first functional overload with ``arity`` arguments."""
    try:
        return torch._C.parse_schema(node.schema())
    except RuntimeError:
        pass
    for schema in torch._C._jit_get_schemas_for_operator(node.kind()):
        if len(schema.arguments) == arity and not any(a.is_out for a in schema.arguments):
            return schema
    raise ReplayError(f"no schema of {node.kind()} takes {arity} arguments")


def _op_overload(schema: torch._C.FunctionSchema) -> torch._ops.OpOverload:
    namespace, name = schema.name.split("::", 1)
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, schema.overload_name or "default")


def _type_text(argument: torch._C.Argument) -> str:
    """'int[]', 'Tensor', 'Scalar'... whatever the schema's spelling (List[int], Optional[..], number)."""
    text = str(argument.type)
    while text.startswith("Optional["):
        text = text[len("Optional["):-1]
    text = text.rstrip("?")
    if text.startswith("List["):
        text = text[len("List["):-1] + "[]"
    for size in ("[1]", "[2]", "[3]"):
        text = text.replace(size, "[]")
    return {"number": "Scalar"}.get(text, text)


def _static_type(value: torch._C.Value | None) -> tuple[list[int], torch.dtype] | None:
    if value is None:
        return None
    sizes = symbolic_helper._get_tensor_sizes(value)
    if sizes is None or any(size is None for size in sizes):
        sizes = traced_input_sizes(value) or sizes  # a model input with declared dynamic dims
    scalar = _type_utils.JitScalarType.from_value(value, _type_utils.JitScalarType.UNDEFINED)
    if sizes is None or any(size is None for size in sizes) or scalar == _type_utils.JitScalarType.UNDEFINED:
        return None
    return sizes, scalar.dtype()


def _example_tensor(value: torch._C.Value, traced: torch._C.Value | None = None) -> torch.Tensor:
    """A tensor of ``value``'s static shape and dtype; ``traced``, the same input of the traced
    node, speaks where the converted value has lost them (it comes out of another fix's nodes,
    which ONNX shape inference does not see through, or has dynamic dims)."""
    static = _static_type(value) or _static_type(traced)
    if static is None:
        raise ReplayError(f"input {value.debugName()} has no static shape and dtype to replay with")
    sizes, dtype = static
    # ones for values, zeros for integers: an index of 0 is valid along any non-empty axis
    return torch.ones(sizes, dtype=dtype) if dtype.is_floating_point else torch.zeros(sizes, dtype=dtype)


def _symbolic_dims(value: torch._C.Value, rank: int) -> tuple[int, ...]:
    """The dims of a converted value the export keeps symbolic (all of them when its shape was lost)."""
    sizes = symbolic_helper._get_tensor_sizes(value)
    if sizes is None or len(sizes) != rank:
        return tuple(range(rank))
    return tuple(d for d, size in enumerate(sizes) if size is None)


@dataclass
class GraphSize:
    """A size argument (or one item of an ``int[]``) the graph computes: where it goes in the op's
    arguments, the converted value holding it (``item``: its index in a 1-D tensor of sizes) and
    its value when traced."""

    slot: tuple[int, int | None]
    value: torch._C.Value
    item: int | None
    hint: int

    def graph_value(self, g) -> torch._C.Value:
        if self.item is None:
            return self.value
        return g.op("Gather", self.value, g.op("Constant", value_t=torch.tensor(self.item)), axis_i=0)


_SIZE_TYPES = ("int", "SymInt", "int[]", "SymInt[]")


def _computed_size(value: torch._C.Value, traced: torch._C.Value | None, argument: torch._C.Argument,
                   index: int) -> tuple[Any, list[GraphSize]]:
    """A size argument the graph computes: its traced value, and where each computed size sits."""
    hint = as_number(traced_value(traced)) if traced is not None else None
    if hint is None:
        raise ReplayError(f"argument {argument.name} is not a constant")
    if not _type_text(argument).endswith("[]"):
        return int(hint), [GraphSize((index, None), value, None, int(hint))]
    if not isinstance(hint, list):
        raise ReplayError(f"argument {argument.name} is not a constant")
    if symbolic_helper._is_packed_list(value):
        items = symbolic_helper._unpack_list(value)
        if len(items) != len(hint):
            raise ReplayError(f"argument {argument.name} is not a constant")
        sizes = [GraphSize((index, j), item, None, int(number)) for j, (item, number) in enumerate(zip(items, hint))
                 if not symbolic_helper._is_constant(item)]
    else:  # a 1-D tensor of sizes (x.size() converted to Shape)
        sizes = [GraphSize((index, j), value, j, int(number)) for j, number in enumerate(hint)]
    return [int(v) for v in hint], sizes


_CONSTANT_DESCRIPTORS = {"int": "i", "SymInt": "i", "float": "f", "bool": "b", "str": "s", "int[]": "is",
                         "SymInt[]": "is", "float[]": "fs", "ScalarType": "i", "Layout": "i", "MemoryFormat": "i"}


def _python_argument(value: torch._C.Value, argument: torch._C.Argument) -> Any:
    """A non-tensor argument of the node as the Python value the op takes."""
    type_text = _type_text(argument)
    if symbolic_helper._is_none(value):
        return None
    if type_text == "Scalar":
        constant = symbolic_helper._maybe_get_const(value, "t")
        if isinstance(constant, torch._C.Value):
            raise ReplayError(f"argument {argument.name} is not a constant")
        return constant.item() if isinstance(constant, torch.Tensor) else constant
    if type_text == "Device":
        return torch.device("cpu")
    descriptor = _CONSTANT_DESCRIPTORS.get(type_text)
    if descriptor is None:
        raise ReplayError(f"argument {argument.name} of type {argument.type} cannot be replayed")
    if not symbolic_helper._is_constant(value) and not (
            symbolic_helper._is_packed_list(value)
            and all(symbolic_helper._is_constant(v) for v in symbolic_helper._unpack_list(value))):
        raise ReplayError(f"argument {argument.name} is not a constant")
    if symbolic_helper._is_packed_list(value):  # a list of constants the conversion folded (sizes at static shapes)
        constant = [symbolic_helper._get_const(v, descriptor.rstrip("s"), argument.name)
                    for v in symbolic_helper._unpack_list(value)]
    else:
        constant = symbolic_helper._get_const(value, descriptor, argument.name)
    if type_text == "ScalarType" or argument.name == "dtype":
        return _type_utils.JitScalarType(constant).dtype()
    return constant


@dataclass
class TraceInputs:
    """The node's arguments for tracing: Python values (example tensors for tensors, traced values
    for sizes the graph computes), the graph values the tensors stand for, the dims of each tensor
    the export keeps symbolic, and the sizes computed in the graph."""

    python_args: list[Any]
    tensor_values: list[torch._C.Value]
    symbolic_dims: list[tuple[int, ...]]
    graph_sizes: list[GraphSize]


def _trace_inputs(schema: torch._C.FunctionSchema, args: Sequence[Any], node: torch._C.Node | None = None,
                  ) -> TraceInputs:
    """The node's arguments for tracing (see :class:`TraceInputs`); ``node``, the traced node,
    supplies static types the converted values have lost and the traced values of computed sizes."""
    traced_inputs = list(node.inputs()) if node is not None else []
    if len(traced_inputs) != len(args):
        traced_inputs = [None] * len(args)
    python_args: list[Any] = []
    tensor_values: list[torch._C.Value] = []
    symbolic_dims: list[tuple[int, ...]] = []
    graph_sizes: list[GraphSize] = []
    for index, (argument, value, traced) in enumerate(zip(schema.arguments, args, traced_inputs)):
        type_text = _type_text(argument)
        if type_text == "Tensor":
            if symbolic_helper._is_none(value):
                python_args.append(None)
                continue
            python_args.append(_example_tensor(value, traced))
            tensor_values.append(value)
            symbolic_dims.append(_symbolic_dims(value, python_args[-1].dim()))
        elif type_text == "Tensor[]":
            if not symbolic_helper._is_packed_list(value):
                raise ReplayError(f"argument {argument.name} is not a list built in the graph")
            items = symbolic_helper._unpack_list(value)
            traced_items = (symbolic_helper._unpack_list(traced)
                            if traced is not None and symbolic_helper._is_packed_list(traced) else [])
            if len(traced_items) != len(items):
                traced_items = [None] * len(items)
            python_args.append([_example_tensor(item, twin) for item, twin in zip(items, traced_items)])
            tensor_values += items
            symbolic_dims += [_symbolic_dims(item, example.dim()) for item, example in zip(items, python_args[-1])]
        elif type_text in _SIZE_TYPES and not symbolic_helper._is_none(value) and not _is_constant_size(value):
            number, sizes = _computed_size(value, traced, argument, index)
            python_args.append(number)
            graph_sizes += sizes
        else:
            python_args.append(_python_argument(value, argument))
    return TraceInputs(python_args, tensor_values, symbolic_dims, graph_sizes)


def _is_constant_size(value: torch._C.Value) -> bool:
    return symbolic_helper._is_constant(value) or (
        symbolic_helper._is_packed_list(value)
        and all(symbolic_helper._is_constant(v) for v in symbolic_helper._unpack_list(value)))


@dataclass
class NodeCall:
    """The node being converted as a call of its ATen overload: Python arguments with example
    tensors of the node's static shapes and dtypes, and the graph values those tensors stand for."""

    op: torch._ops.OpOverload
    python_args: list[Any]
    tensor_values: list[torch._C.Value]

    def run(self, tensors: Sequence[torch.Tensor]) -> Any:
        """The op on ``tensors`` in place of the example tensors, constants as in the node."""
        filled = [list(a) if isinstance(a, list) else a for a in self.python_args]
        given = iter(tensors)
        for index, value in enumerate(filled):
            if isinstance(value, torch.Tensor):
                filled[index] = next(given)
            elif isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
                filled[index] = [next(given) for _ in value]
        arguments = self.op._schema.arguments
        positional = [v for v, a in zip(filled, arguments) if not a.kwarg_only]
        return self.op(*positional, **{a.name: v for v, a in zip(filled, arguments) if a.kwarg_only})

    def example_tensors(self) -> list[torch.Tensor]:
        return [t for a in self.python_args for t in (a if isinstance(a, list) else [a])
                if isinstance(t, torch.Tensor)]


def node_call(g, args: Sequence[Any]) -> NodeCall:
    """``g.original_node`` as a :class:`NodeCall` (raises ReplayError when its inputs have no static
    shape or an argument is not a constant)."""
    schema = _node_schema(g.original_node, len(args))
    inputs = _trace_inputs(schema, args, g.original_node)
    return NodeCall(_op_overload(schema), inputs.python_args, inputs.tensor_values)


def _registered_symbolic(name: str, opset: int):
    """The exporter's symbolic for ``name`` at ``opset``; in-place ops use the functional one, as in
    the exporter (each traced step gets a fresh output, so nothing aliases)."""
    group = registration.registry.get_function_group(name)
    if (group is None or group.get(opset) is None) and name.endswith("_"):
        group = registration.registry.get_function_group(name[:-1])
    return group.get(opset) if group is not None else None


def _has_symbolic(name: str, opset: int) -> bool:
    return name == "prims::convert_element_type" or _registered_symbolic(name, opset) is not None


def _aten_twin(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The ATen op of a ``prims`` op's name taking the same arguments (``prims::signbit`` ->
    ``aten::signbit``): torch._refs end in prims, which the exporter knows by their ATen names."""
    namespace, _, name = op._schema.name.partition("::")
    packet = getattr(torch.ops.aten, name, None) if namespace == "prims" else None
    twin = getattr(packet, "default", None)
    if twin is None or [a.name for a in twin._schema.arguments] != [a.name for a in op._schema.arguments] and \
            len(twin._schema.arguments) != len(op._schema.arguments):
        return None
    return twin


def _decompositions(op, opset: int, with_refs: bool, extra: dict | None = None) -> dict:
    """The op's own decomposition plus those of every op without a symbolic at ``opset``, and all of
    ``extra`` (Fixport's own, for ops torch has none that converts), which win over torch's.

    ``torch._refs`` entries often end in ``prims`` ops that nothing converts: they are used only
    ``with_refs``, after the ATen-level decompositions alone failed."""
    from torch._decomp import decomposition_table

    table = {other: fn for other, fn in decomposition_table.items()
             if isinstance(other, torch._ops.OpOverload) and not _has_symbolic(other._schema.name, opset)
             and (with_refs or not fn.__module__.startswith("torch._refs"))}
    if op in decomposition_table:
        table[op] = decomposition_table[op]
    # Fixport's own apply even where a symbolic exists: they exist because that symbolic refuses
    # an overload (squeeze.dims) or a reduction (scatter_reduce amax) at the opsets that matter.
    return {**table, **(extra or {})}


def trace_decomposition(op, python_args: list[Any], opset: int, with_refs: bool = False,
                        tracing_mode: str = "real", extra: dict | None = None,
                        symbolic: tuple[list[Any], list[tuple[int, int | None]]] | None = None) -> torch.fx.GraphModule:
    """``op`` on the example arguments, traced into the ATen ops its decomposition calls.

    ``fake`` tracing never looks at the values (a decomposition that branches on them fails);
    ``real`` runs on ones and zeros and bakes in the branches they take. ``symbolic`` (fake tensors
    with symbolic sizes and symbolic size arguments, and the argument slots of those sizes) traces
    with sizes kept symbolic: the trace has one input per tensor, then one per size."""
    from torch.fx.experimental.proxy_tensor import make_fx

    tensor_slots = [(i, j) for i, a in enumerate(python_args) for j in
                    ([None] if isinstance(a, torch.Tensor) else
                     range(len(a)) if isinstance(a, list) and a and isinstance(a[0], torch.Tensor) else [])]
    size_slots = symbolic[1] if symbolic is not None else []

    keyword_only = [a.kwarg_only for a in op._schema.arguments]
    # Fixport's decomposition of the op itself is called directly: a CompositeImplicitAutograd op
    # (cov, bilinear) decomposes in C++ before the tracer could look it up in the table.
    target = (extra or {}).get(op, op)

    def call(*values):
        filled = [list(a) if isinstance(a, list) else a for a in python_args]
        for (i, j), value in zip([*tensor_slots, *size_slots], values):
            if j is None:
                filled[i] = value
            else:
                filled[i][j] = value
        positional = [v for v, only in zip(filled, keyword_only) if not only]
        keywords = {a.name: v for a, v in zip(op._schema.arguments, filled) if a.kwarg_only}
        return target(*positional, **keywords)

    examples = symbolic[0] if symbolic is not None else \
        [python_args[i] if j is None else python_args[i][j] for i, j in tensor_slots]
    with torch.no_grad():
        return make_fx(call, decomposition_table=_decompositions(op, opset, with_refs, extra),
                       tracing_mode="symbolic" if symbolic is not None else tracing_mode)(*examples)


def _non_negative_dims(node: torch.fx.Node, argument: torch._C.Argument, value: Any) -> Any:
    """``dims`` (permute, flip, roll) counted from the front: some symbolics (permute's Transpose
    ``perm``) take them as they are, and ONNX refuses negative ones."""
    if argument.name != "dims" or not isinstance(value, (list, tuple)) or not node.args:
        return value
    example = getattr(node.args[0], "meta", {}).get("val")
    if not isinstance(example, torch.Tensor):
        return value
    return [d + example.dim() if isinstance(d, int) and d < 0 else d for d in value]


def _dead_mutation(node: torch.fx.Node) -> bool:
    """An in-place step nothing reads afterwards (batch norm's running statistics): an ONNX graph
    cannot update its inputs, and no output depends on it."""
    if not node.target._schema.name.endswith("_") or node.users or not node.args \
            or not isinstance(node.args[0], torch.fx.Node) or node.args[0].op != "placeholder":
        return False  # only an input (never a view, whose base other steps may read) is left as it was
    seen, later = False, set()
    for following in node.graph.nodes:
        if seen:
            later.add(following)
        seen = seen or following is node
    return not any(user in later for user in node.args[0].users)


def _is_size(value: Any) -> bool:
    """An int, or a traced step whose value is one (a symbolic size)."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("val")
    return isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool)


class _Emitter:
    """Converts the traced ATen calls with the exporter's registered symbolics."""

    def __init__(self, g, opset: int, kind: str, step_fallback: StepFallback | None = None) -> None:
        self.g, self.opset, self.kind, self.step_fallback = g, opset, kind, step_fallback

    def constant(self, value: Any) -> Any:
        g = self.g
        if value is None or isinstance(value, (torch.device, torch.layout, torch.memory_format)):
            return g.op("prim::Constant").setType(torch._C.NoneType.get())
        if isinstance(value, torch.dtype):
            return g.op("Constant", value_t=torch.tensor(_type_utils.JitScalarType.from_dtype(value)))
        if isinstance(value, torch.Tensor):
            return g.op("Constant", value_t=value)
        if isinstance(value, bool):
            return g.op("Constant", value_t=torch.tensor(value))
        if isinstance(value, (int, float)):
            return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64 if isinstance(value, int)
                                                         else torch.float64))
        if isinstance(value, str):
            return g.op("prim::Constant", value_s=value)
        raise ReplayError(f"{self.kind}: constant {value!r} cannot be emitted")

    def argument(self, value: Any, env: dict, type_text: str = "") -> Any:
        if isinstance(value, torch.fx.Node):
            return env[value]
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.fx.Node) for v in value) \
                and all(_is_size(v) for v in value):  # sizes, some symbolic: one 1-D int64 tensor
            return self.g.op("Concat", *[symbolic_helper._unsqueeze_helper(self.g, self.argument(v, env), [0])
                                         for v in value], axis_i=0)
        if isinstance(value, (list, tuple)):
            if any(isinstance(v, torch.fx.Node) for v in value) or any(isinstance(v, torch.Tensor) for v in value):
                return self.g.op("prim::ListConstruct", *[self.argument(v, env) for v in value])
            if value and all(isinstance(v, (int, bool)) for v in value) or not value and type_text.startswith(
                    ("int", "SymInt")):  # an empty int[] (view to a scalar) must still be a 1-D tensor
                return self.g.op("Constant", value_t=torch.tensor([int(v) for v in value], dtype=torch.int64))
            if value and all(isinstance(v, (int, float)) for v in value):
                return self.g.op("Constant", value_t=torch.tensor(value, dtype=torch.float64))
            return self.g.op("prim::ListConstruct", *[self.argument(v, env) for v in value])
        return self.constant(value)

    def step_arguments(self, node: torch.fx.Node) -> list[tuple[torch._C.Argument, Any]]:
        """Every schema argument of a traced step with the value the trace gave it (or its default)."""
        op = node.target
        found = []
        for index, argument in enumerate(op._schema.arguments):
            if argument.kwarg_only and argument.name not in node.kwargs and argument.has_default_value():
                value = argument.default_value
            elif index < len(node.args):
                value = node.args[index]
            elif argument.name in node.kwargs:
                value = node.kwargs[argument.name]
            elif argument.has_default_value():
                value = argument.default_value
            else:
                raise ReplayError(f"{op._schema.name}: argument {argument.name} missing in the trace")
            found.append((argument, value))
        return found

    def call(self, node: torch.fx.Node, env: dict) -> Any:
        op = node.target
        name = op._schema.name
        if op is torch.ops.prims.convert_element_type.default:  # refs cast with it; ONNX Cast is the same
            to = _type_utils.JitScalarType.from_dtype(node.args[1]).onnx_type()
            return self.g.op("Cast", env[node.args[0]], to_i=to)
        arguments = self.step_arguments(node)
        symbolic = _registered_symbolic(name, self.opset)
        twin = _aten_twin(op)
        if symbolic is None and twin is not None and twin._schema.name != self.kind:  # prims::signbit is aten::signbit
            op, name, symbolic = twin, twin._schema.name, _registered_symbolic(twin._schema.name, self.opset)
        if symbolic is None and self.step_fallback is not None:
            return self.fallback(op, arguments, env)
        if symbolic is None:
            raise ReplayError(f"torch's decomposition of {self.kind} uses {name}, which has no symbolic at "
                              f"opset {self.opset} and no decomposition of its own")
        inputs = [self.argument(_non_negative_dims(node, argument, value), env, _type_text(argument))
                  for argument, value in arguments]
        try:
            return symbolic(self.g, *inputs)
        except Exception as error:
            if self.step_fallback is not None and self.step_fallback.handles(op):  # e.g. squeeze.dims
                return self.fallback(op, arguments, env)  # (a list of dims) that the symbolic refuses
            raise ReplayError(f"torch's decomposition of {self.kind} uses {name}, whose symbolic failed at "
                              f"opset {self.opset}: {type(error).__name__}: {error}") from error

    def fallback(self, op, arguments: list[tuple[torch._C.Argument, Any]], env: dict) -> Any:
        """A step with no symbolic, emitted by ``step_fallback`` (e.g. onnxscript's torch_lib) from
        graph values for its tensors and Python values for the rest."""
        def value_of(value: Any) -> Any:
            if isinstance(value, torch.fx.Node):
                return env[value]
            if isinstance(value, (list, tuple)):
                return [value_of(v) for v in value]
            return value

        try:
            outputs = self.step_fallback(self.g, op, [value_of(value) for _, value in arguments])
        except Exception as error:
            raise ReplayError(f"torch's decomposition of {self.kind} uses {op._schema.name}, which has no "
                              f"symbolic at opset {self.opset}, and {type(error).__name__}: {error}") from error
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def item(self, outputs: Any, index: int) -> Any:
        """Output ``index`` of a step: its own value, or an element of the ONNX sequence a list-returning
        symbolic (split, unbind) made."""
        if isinstance(outputs, (tuple, list)):
            return outputs[index]
        return self.g.op("SequenceAt", outputs, self.constant(index))

    def graph(self, traced: torch.fx.GraphModule, values: list[torch._C.Value]) -> Any:
        env: dict[torch.fx.Node, Any] = {}
        placeholders = iter(values)
        for node in traced.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(placeholders)
            elif node.op == "get_attr":
                env[node] = self.constant(getattr(traced, node.target))
            elif node.op == "call_function" and node.target is operator.getitem:
                env[node] = self.item(env[node.args[0]], node.args[1])
            elif node.op == "call_function" and is_size_step(node):
                env[node] = emit_size_step(self.g, node, env)
            elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                env[node] = env[node.args[0]] if _dead_mutation(node) else self.call(node, env)
            elif node.op == "output":
                result = node.args[0]
                return tuple(self.argument(v, env) for v in result) if isinstance(result, (list, tuple)) \
                    else self.argument(result, env)
            else:
                raise ReplayError(f"{self.kind}: traced step {node.target} cannot be converted")
        raise ReplayError(f"{self.kind}: the trace has no output")


def _unconvertible_steps(traced: torch.fx.GraphModule, op, opset: int,
                         step_fallback: StepFallback | None = None) -> list[str]:
    return sorted({n.target._schema.name for n in traced.graph.nodes
                   if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and not is_size_step(n)
                   and (n.target is op or not _convertible(n.target, op, opset, step_fallback))})


def _convertible(step: torch._ops.OpOverload, op: torch._ops.OpOverload, opset: int,
                 step_fallback: StepFallback | None) -> bool:
    for candidate in (step, _aten_twin(step)):
        if candidate is not None and candidate is not op and (_has_symbolic(candidate._schema.name, opset) or
                                      step_fallback is not None and step_fallback.handles(candidate)):
            return True
    return False


def _best_trace(op, python_args: list[Any], opset: int, step_fallback: StepFallback | None,
                extra: dict | None, symbolic: tuple[list[Any], list] | None = None,
                ) -> tuple[torch.fx.GraphModule, bool]:
    """The first trace whose every step converts, and whether it kept sizes symbolic: with
    ``symbolic`` inputs, symbolic traces first; then ATen-level decompositions before ``torch._refs``
    (whose prims few things convert), each traced on fake tensors before real ones."""
    first_error, first_trace = None, None
    attempts = [(with_refs, "symbolic") for with_refs in (False, True)] if symbolic is not None else []
    attempts += [(with_refs, mode) for with_refs in (False, True) for mode in ("fake", "real")]
    for with_refs, mode in attempts:
        try:
            traced = trace_decomposition(op, python_args, opset, with_refs, mode, extra,
                                         symbolic if mode == "symbolic" else None)
        except Exception as error:  # noqa: BLE001 -- a decomposition that cannot trace this way
            first_error = first_error or error
            continue
        if not _unconvertible_steps(traced, op, opset, step_fallback):
            return traced, mode == "symbolic"
        first_trace = first_trace or (traced, mode == "symbolic")
    if first_trace is None:
        raise ReplayError(f"torch's decomposition of {op._schema.name} cannot be traced: "
                          f"{type(first_error).__name__}: {first_error}") from first_error
    return first_trace


def _symbolic_plan(g, inputs: TraceInputs) -> tuple[tuple[list[Any], list], Any, dict] | None:
    """Symbolic inputs for the trace when the export declares dynamic dims that reach this node
    (fake tensors, size slots), their shape environment and readable symbol names; else None."""
    if not (any(inputs.symbolic_dims) or inputs.graph_sizes) or not export_is_dynamic(g):
        return None
    examples = [t for a in inputs.python_args for t in (a if isinstance(a, list) else [a])
                if isinstance(t, torch.Tensor)]
    fakes, shape_env = symbolic_examples(examples, inputs.symbolic_dims, [s.hint for s in inputs.graph_sizes])
    names = [f"its input {i}" for i in range(len(examples))] + \
        [f"size argument {s.slot[0]}" + (f"[{s.slot[1]}]" if s.slot[1] is not None else "") for s in inputs.graph_sizes]
    return (fakes, [s.slot for s in inputs.graph_sizes]), shape_env, symbol_names(fakes, names)


def emit_decomposition(g, args: Sequence[Any], step_fallback: StepFallback | None = None,
                       extra_decompositions: dict | None = None) -> Any:
    """Emit ``g.original_node`` as torch's decomposition of it (see the module docstring);
    ``step_fallback`` emits the steps that have no symbolic; ``extra_decompositions`` adds to
    torch's table (op overload -> function in torch ops)."""
    node = g.original_node
    schema = _node_schema(node, len(args))
    op = _op_overload(schema)
    inputs = _trace_inputs(schema, args, node)
    plan = _symbolic_plan(g, inputs)
    traced, symbolic = _best_trace(op, inputs.python_args, g.opset, step_fallback, extra_decompositions,
                                   plan[0] if plan is not None else None)
    if any(n.op == "call_function" and n.target is op for n in traced.graph.nodes):
        raise ReplayError(f"torch has no decomposition of {op._schema.name}")
    if plan is not None:
        _warn_about_sizes(node.kind(), symbolic, plan[1], plan[2])
    values = [*inputs.tensor_values, *[s.graph_value(g) for s in inputs.graph_sizes]] if symbolic \
        else inputs.tensor_values
    result = _Emitter(g, g.opset, node.kind(), step_fallback).graph(traced, values)
    if isinstance(result, tuple) and node.outputsSize() == 1:
        if isinstance(node.output().type(), torch._C.ListType):  # Tensor[]: the exporter expects a sequence
            return g.op("SequenceConstruct", *result)
        if len(result) == 1:
            return result[0]
    return result


def _warn_about_sizes(kind: str, symbolic: bool, shape_env: Any, names: dict) -> None:
    """Say when a replay under declared dynamic dims does not hold at every size."""
    if not symbolic:
        warnings.warn(f"{kind} is replayed at the traced sizes: torch's decomposition of it cannot be traced "
                      f"with the declared dynamic dims symbolic, so it is wrong at other sizes.",
                      ReplayConditionWarning, stacklevel=2)
        return
    conditions = size_conditions(shape_env, names)
    if conditions:
        warnings.warn(f"{kind} is replayed with its sizes symbolic, but torch's decomposition branches on them: "
                      f"it holds only for {'; '.join(conditions)}.", ReplayConditionWarning, stacklevel=2)
