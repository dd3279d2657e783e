"""Sizes in a replayed decomposition: read from the trace, or kept symbolic as graph arithmetic.

With static shapes, a size argument the model computes in the graph (an interpolation to
``(h * 2, w * 2)``) is not an ONNX constant, but the trace knows its value: :func:`traced_value`
reads it. Where the export declares dynamic dims, the decomposition is traced on symbolic sizes
instead (:func:`symbolic_examples`), and every size step it records (``sym_size``, ``*``, ``//``,
...) becomes ONNX arithmetic on ``Shape`` (:func:`emit_size_step`), so the replay holds at other
sizes. Where the decomposition branches on a size, torch records the branch as a guard:
:func:`size_conditions` names those the replay depends on.

Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

_MAX_DEPTH = 40  # how far back through the trace a size is followed
_traced_input_sizes: dict[str, list[int]] = {}  # the graph inputs' sizes when traced, by name (latest export)


def _recording_input_sizes(set_dynamic_input_shape: Any) -> Any:
    """The exporter's pass that makes declared dims symbolic, first noting the sizes they were traced at
    (afterwards the graph's inputs have lost them; only their values inside the graph keep theirs)."""
    def record_then_set(graph: torch._C.Graph, *args: Any, **kwargs: Any) -> Any:
        _traced_input_sizes.clear()
        for value in graph.inputs():
            if isinstance(value.type(), torch._C.TensorType) and value.type().sizes() is not None:
                _traced_input_sizes[value.debugName()] = list(value.type().sizes())
        return set_dynamic_input_shape(graph, *args, **kwargs)

    record_then_set.fixport_records_sizes = True
    return record_then_set


if not getattr(torch._C._jit_pass_onnx_set_dynamic_input_shape, "fixport_records_sizes", False):
    torch._C._jit_pass_onnx_set_dynamic_input_shape = _recording_input_sizes(
        torch._C._jit_pass_onnx_set_dynamic_input_shape)


def traced_input_sizes(value: torch._C.Value) -> list[int] | None:
    """The sizes a graph input of the traced model had before the export made declared dims symbolic."""
    if value.node().kind() != "prim::Param":
        return None
    return _traced_input_sizes.get(value.debugName())


def traced_value(value: torch._C.Value, depth: int = 0) -> Any:
    """The value ``value`` (a size or list of sizes in the traced TorchScript graph) had when the
    model was traced, or None when it depends on tensor data or cannot be followed."""
    node = value.node()
    kind = node.kind()
    if depth > _MAX_DEPTH:
        return None
    if kind == "prim::Constant":
        return value.toIValue()
    if kind == "aten::size":
        tensor, *dim_value = list(node.inputs())
        sizes = tensor.type().sizes() if isinstance(tensor.type(), torch._C.TensorType) else None
        if sizes is None or any(s is None for s in sizes):
            sizes = traced_input_sizes(tensor)
        if sizes is None or any(s is None for s in sizes):
            return None
        if not dim_value:
            return list(sizes)
        dim = as_number(traced_value(dim_value[0], depth + 1))
        return sizes[dim] if isinstance(dim, int) else None
    inputs = [traced_value(v, depth + 1) for v in node.inputs()]
    if any(v is None for v in inputs):
        return None
    if kind == "prim::ListConstruct":
        return inputs
    if kind == "prim::NumToTensor":
        return torch.tensor(inputs[0])
    if kind in ("aten::Int", "aten::IntImplicit", "aten::ScalarImplicit", "aten::Float", "aten::FloatImplicit"):
        number = inputs[0].item() if isinstance(inputs[0], torch.Tensor) else inputs[0]
        return float(number) if "Float" in kind else int(number)
    if not kind.startswith("aten::") or any(isinstance(v, torch.Tensor) and v.dim() > 0 for v in inputs):
        return None  # only scalar arithmetic on sizes is followed, never tensor data
    try:
        result = getattr(torch.ops.aten, kind[len("aten::"):])(*inputs)
    except Exception:  # noqa: BLE001 -- an op that does not take these values: not a size
        return None
    return result if isinstance(result, (int, float, bool, list, torch.Tensor)) else None


def as_number(value: Any) -> Any:
    """A traced size as the Python number (or list of numbers) an op's ``int``/``int[]`` takes."""
    if isinstance(value, torch.Tensor):
        return value.item() if value.dim() == 0 else [int(v) for v in value.tolist()]
    if isinstance(value, list):
        return [as_number(v) for v in value]
    return value


def export_is_dynamic(g) -> bool:
    """Whether the export declared dynamic dims: an input of the graph being built has a symbolic size."""
    for value in g.graph.inputs():
        if isinstance(value.type(), torch._C.TensorType):
            sizes = symbolic_helper._get_tensor_sizes(value)
            if sizes is not None and any(size is None for size in sizes):
                return True
    return False


def symbolic_examples(examples: Sequence[torch.Tensor], dynamic_dims: Sequence[Sequence[int]],
                      size_hints: Sequence[int]) -> tuple[list[Any], Any]:
    """Fake tensors whose ``dynamic_dims`` are symbolic, and symbolic sizes traced as ``size_hints``,
    in one shape environment (returned too, for its guards). Each dim gets its own symbol: two dims
    that happen to be equal when traced are not assumed equal."""
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    shape_env = ShapeEnv(duck_shape=False)
    mode = FakeTensorMode(shape_env=shape_env)
    fakes: list[Any] = []
    for tensor, dims in zip(examples, dynamic_dims):
        dynamic = [DimDynamic.DYNAMIC if d in dims else DimDynamic.STATIC for d in range(tensor.dim())]
        fakes.append(mode.from_tensor(tensor, symbolic_context=StatelessSymbolicContext(dynamic_sizes=dynamic)))
    for index, hint in enumerate(size_hints):
        symbol = shape_env.create_symbol(int(hint), ConstantSource(f"size_{index}"), dynamic_dim=DimDynamic.DYNAMIC)
        fakes.append(shape_env.create_symintnode(symbol, hint=int(hint)))
    return fakes, shape_env


def symbol_names(fakes: Sequence[Any], names: Sequence[str]) -> dict[Any, str]:
    """Each symbol of ``fakes`` (tensors and sizes) -> a readable name: ``input0.size(2)``, ``size argument 1``."""
    found: dict[Any, str] = {}
    for fake, name in zip(fakes, names):
        if isinstance(fake, torch.SymInt):
            found.setdefault(fake.node.expr, name)
            continue
        for dim, size in enumerate(fake.shape):
            if isinstance(size, torch.SymInt):
                found.setdefault(size.node.expr, f"dim {dim} of {name}")
    return found


def size_conditions(shape_env: Any, names: dict[Any, str]) -> list[str]:
    """For each symbolic size the trace branched on, the sizes around the traced one where every
    branch goes the same way (the others at their traced values): ``input0.size(2) from 29 to 34``."""
    import sympy

    guards = [guard.expr for guard in shape_env.guards if guard.expr.free_symbols & set(names)]
    hints = {symbol: int(value) for symbol, value in shape_env.var_to_val.items()}
    found = []
    for symbol, name in names.items():
        own = [expr for expr in guards if symbol in expr.free_symbols]
        if symbol not in hints or not own:
            continue

        def holds(size: int, symbol: Any = symbol, own: list = own) -> bool:
            values = {**hints, symbol: size}
            return all(bool(expr.xreplace({s: sympy.Integer(values[s]) for s in expr.free_symbols if s in values}))
                       for expr in own)

        hint = hints[symbol]
        low = hint
        while low > 2 and holds(low - 1):
            low -= 1
        high, ceiling = hint, max(4 * hint, 64)
        while high < ceiling and holds(high + 1):
            high += 1
        if low <= 2 and high >= ceiling:
            continue
        found.append(f"{name} = {hint}" if low == high else
                     f"{name} >= {low}" if high >= ceiling else f"{name} from {low} to {high}")
    return found


# Steps on sizes: Python's own operators on SymInts (what the trace records for ``a * b``).
_BINARY = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.mod: "Mod",
           operator.pow: "Pow", torch.sym_max: "Max", torch.sym_min: "Min"}
_CHECKS = ("aten::_assert_scalar", "aten::sym_constrain_range", "aten::sym_constrain_range_for_size",
           "aten::_assert_async")


def is_size_step(node: torch.fx.Node) -> bool:
    """Whether the traced step computes a size (or asserts one) rather than a tensor."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.name in ("aten::sym_size", "aten::sym_numel", *_CHECKS)
    return target in _BINARY or target in (operator.floordiv, operator.truediv, operator.neg, math.ceil,
                                           math.floor, torch.sym_float, torch.sym_int) or \
        getattr(target, "__module__", "") == "_operator"


def _is_float(value: Any) -> bool:
    return isinstance(value, (float, torch.SymFloat))


def emit_size_step(g, node: torch.fx.Node, env: dict) -> Any:
    """``node``, a step on sizes, as ONNX ops on 0-d int64 (double for float sizes) values."""
    target = node.target
    if isinstance(node.meta.get("val"), (bool, torch.SymBool)):
        return None  # a comparison, which only feeds the checks below
    if isinstance(target, torch._ops.OpOverload):
        name = target._schema.name
        if name in _CHECKS:
            return None  # a check the trace already made at the traced sizes; ONNX has no assert
        tensor = env[node.args[0]]
        if name == "aten::sym_numel":
            return g.op("Size", tensor)
        return g.op("Gather", g.op("Shape", tensor), g.op("Constant", value_t=torch.tensor(node.args[1])), axis_i=0)
    result_is_float = _is_float(node.meta.get("val"))
    operands = [_operand(g, a, env, result_is_float or target is operator.truediv) for a in node.args]
    if target in _BINARY:
        return g.op(_BINARY[target], *operands)
    if target is operator.neg:
        return g.op("Neg", operands[0])
    if target is operator.truediv:
        return g.op("Div", *operands)
    if target is operator.floordiv:  # Python's floor, exact for sizes (ONNX's integer Div truncates)
        quotient = g.op("Floor", g.op("Div", *[_as_double(g, o) for o in operands]))
        return quotient if result_is_float else g.op("Cast", quotient, to_i=_INT64)
    if target in (math.ceil, math.floor):
        return g.op("Cast", g.op("Ceil" if target is math.ceil else "Floor", operands[0]), to_i=_INT64)
    if target is torch.sym_float:
        return _as_double(g, operands[0])
    if target is torch.sym_int:
        return g.op("Cast", operands[0], to_i=_INT64)
    raise NotImplementedError(f"the size step {getattr(target, '__name__', target)} has no ONNX form here")


_INT64, _DOUBLE = 7, 11  # ONNX TensorProto data types


def _as_double(g, value: Any) -> Any:
    return g.op("Cast", value, to_i=_DOUBLE)


def _operand(g, argument: Any, env: dict, as_float: bool) -> Any:
    if isinstance(argument, torch.fx.Node):
        value = env[argument]
        return _as_double(g, value) if as_float and not _is_float(argument.meta.get("val")) else value
    if as_float or isinstance(argument, float):
        return g.op("Constant", value_t=torch.tensor(float(argument), dtype=torch.float64))
    return g.op("Constant", value_t=torch.tensor(int(argument), dtype=torch.int64))
