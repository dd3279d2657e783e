"""Replay an onnxscript torch_lib function into a TorchScript-exporter graph (``g.op`` calls).

torch_lib functions are traced with torch's ONNX-IR ``OpRecorder`` (the dynamo exporter's
evaluator) on IR values that mirror the node's inputs; the recorded standard-ONNX nodes are
then re-emitted with ``g.op``. Calls to scripted torch_lib functions are inlined from their
FunctionProto, so the exported model holds only standard ops. Imports torch: use only from
a template's ``symbolic`` at export time.

torch_lib is written against opset 18. Below 18 each recorded op is re-emitted in its form at
the export's opset (see ``_emit_at_opset``): an input that became an attribute there (ReduceMax
``axes``, Squeeze ``axes`` before 13, Slice before 10) is passed as that attribute when it is a
constant, Split's ``num_outputs`` becomes split sizes, and an attribute the older op lacks is
dropped when it holds its default. Anything else that differs raises BridgeError naming the op.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import onnx
import torch
from onnx import helper as onnx_helper
from onnx import numpy_helper
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.core.foundation.torch_arrays import tensor_from_array

TORCHLIB_OPSET = 18


class BridgeError(RuntimeError):
    """The torch_lib function cannot be replayed for this node."""


def torchlib_function(kind: str, overload: str = ""):
    """The torch_lib OnnxFunction/TracedOnnxFunction for 'aten::op' (overload first)."""
    import onnxscript.function_libs.torch_lib.ops  # noqa: F401 - the import registers the ops in default_registry
    from onnxscript.function_libs.torch_lib.registration import default_registry

    for name in ([f"{kind}.{overload}"] if overload else []) + [kind, f"{kind}.default"]:
        if name in default_registry:
            return default_registry[name].overloads[0]
    raise BridgeError(f"onnxscript torch_lib has no implementation of {kind}")


_REAL_OF_COMPLEX = {"COMPLEX64": "FLOAT", "COMPLEX128": "DOUBLE"}


def _ir_value(value: torch._C.Value, name: str, complex_layout: bool = False):
    """``value`` as an ONNX-IR value; ``complex_layout``: a complex tensor as the real one it is
    carried as (a trailing (real, imag) axis of 2), as the dynamo exporter hands it to functions."""
    from torch.onnx._internal._lazy_import import onnx_ir as ir

    scalar = _type_utils.JitScalarType.from_value(value, _type_utils.JitScalarType.UNDEFINED)
    dtype = None if scalar == _type_utils.JitScalarType.UNDEFINED else ir.DataType(scalar.onnx_type())
    sizes = symbolic_helper._get_tensor_sizes(value)
    if complex_layout and dtype is not None and dtype.name in _REAL_OF_COMPLEX:
        dtype = ir.DataType[_REAL_OF_COMPLEX[dtype.name]]
        sizes = [*sizes, 2] if sizes is not None else None
    return ir.Value(name=name, type=ir.TensorType(dtype) if dtype else None,
                    shape=ir.Shape(sizes) if sizes is not None else None)


_DESCRIPTOR = {"int": "i", "float": "f", "bool": "b", "str": "s", "int[]": "is", "float[]": "fs",
               "SymInt": "i", "SymInt[]": "is", "ScalarType": "i", "Layout": "i", "Device": "s",
               "MemoryFormat": "i"}


def _schema_type(type_text: str) -> str:
    """A schema argument's type as _DESCRIPTOR spells it: 'Optional[List[int]]' and 'int[2]?' are
    'int[]', 'number' is 'Scalar'."""
    text = type_text
    while text.startswith("Optional["):
        text = text[len("Optional["):-1]
    text = text.rstrip("?")
    if text.startswith("List["):
        text = text[len("List["):-1] + "[]"
    text = re.sub(r"\[\d+\]", "[]", text)
    return {"number": "Scalar"}.get(text, text)


def _python_argument(value: torch._C.Value, type_text: str) -> Any:
    base = _schema_type(type_text)
    if symbolic_helper._is_none(value):
        return None
    if base == "Scalar":
        constant = symbolic_helper._maybe_get_const(value, "t")
        return constant.item() if isinstance(constant, torch.Tensor) else constant
    descriptor = _DESCRIPTOR.get(base)
    if descriptor is None:
        return value
    if descriptor in ("is", "fs") and symbolic_helper._is_packed_list(value):
        items = symbolic_helper._unpack_list(value)
        if all(symbolic_helper._is_constant(item) for item in items):
            return [symbolic_helper._get_const(item, descriptor[0], "list item") for item in items]
        return value
    return symbolic_helper._maybe_get_const(value, descriptor)


def _attribute_kwargs(attributes: dict[str, Any]) -> dict[str, Any]:
    """Python attribute values -> g.op keyword arguments with exporter suffixes."""
    kwargs: dict[str, Any] = {}
    for name, value in attributes.items():
        if isinstance(value, onnx.TensorProto):
            kwargs[f"{name}_t"] = tensor_from_array(numpy_helper.to_array(value).copy())
        elif isinstance(value, (bytes, str)):
            kwargs[f"{name}_s"] = value.decode() if isinstance(value, bytes) else value
        elif isinstance(value, bool) or isinstance(value, int):
            kwargs[f"{name}_i"] = int(value)
        elif isinstance(value, float):
            kwargs[f"{name}_f"] = value
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], float):
            kwargs[f"{name}_f"] = list(value)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], (bytes, str)):
            kwargs[f"{name}_s"] = [v.decode() if isinstance(v, bytes) else v for v in value]
        elif isinstance(value, (list, tuple)):
            kwargs[f"{name}_i"] = [int(v) for v in value]
        else:
            raise BridgeError(f"attribute {name} of type {type(value).__name__} cannot be replayed")
    return kwargs


def _onnx_schema(op_type: str, opset: int):
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None


def _attribute_default(schema, name: str) -> Any:
    attribute = schema.attributes.get(name)
    if attribute is None or not attribute.default_value.name:
        return None
    return onnx_helper.get_attribute_value(attribute.default_value)


def _constant_list(value, op_type: str, name: str) -> list[int]:
    if not symbolic_helper._is_constant(value):
        raise BridgeError(f"{op_type} at this opset takes '{name}' as an attribute, but torch_lib computes it "
                          "at run time")
    constant = symbolic_helper._maybe_get_const(value, "is")
    return [int(v) for v in (constant.tolist() if isinstance(constant, torch.Tensor) else constant)]


def _split_sizes(g, data, attrs: dict[str, Any], outputs: int) -> list[int]:
    """Split's opset-18 ``num_outputs`` as the explicit sizes older opsets need (static shapes)."""
    sizes = symbolic_helper._get_tensor_sizes(data)
    axis = attrs.get("axis", 0)
    if not sizes or sizes[axis] is None:
        raise BridgeError("Split with num_outputs needs a static size on its axis below opset 18")
    total, parts = sizes[axis], attrs.pop("num_outputs")
    chunk = -(-total // parts)
    return [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])


_CONSTANT_VALUE_DTYPES = {"value_int": torch.int64, "value_ints": torch.int64, "value_float": torch.float32,
                          "value_floats": torch.float32}


def _constant_as_tensor(attrs: dict[str, Any]) -> dict[str, Any]:
    """Constant's ``value_int``/``value_floats``/... as the ``value`` tensor, the one form the
    TorchScript exporter's shape inference reads."""
    for name, dtype in _CONSTANT_VALUE_DTYPES.items():
        if name in attrs:
            return {"value": numpy_helper.from_array(torch.tensor(attrs[name], dtype=dtype).numpy())}
    return attrs


def _emit_at_opset(g, op_type: str, inputs: list[Any], attrs: dict[str, Any], outputs: int) -> list[Any]:
    """Emit one standard op recorded at opset 18 in its form at ``g.opset``."""
    if op_type == "Constant":
        attrs = _constant_as_tensor(attrs)
    if g.opset < TORCHLIB_OPSET:
        inputs, attrs = _adapt_signature(g, op_type, inputs, dict(attrs), outputs)
    present = [g.op("prim::Constant").setType(torch._C.OptionalType.ofTensor())
               if value is None else value for value in inputs]
    while present and inputs and inputs[len(present) - 1] is None:
        present.pop()
    result = g.op(op_type, *present, outputs=outputs, **_attribute_kwargs(attrs))
    return list(result) if outputs > 1 else [result]


def _adapt_signature(g, op_type: str, inputs: list[Any], attrs: dict[str, Any],
                     outputs: int) -> tuple[list[Any], dict[str, Any]]:
    recorded, target = _onnx_schema(op_type, TORCHLIB_OPSET), _onnx_schema(op_type, g.opset)
    if target is None:
        raise BridgeError(f"torch_lib uses ONNX {op_type}, which does not exist at opset {g.opset}")
    if recorded is None or recorded.since_version == target.since_version:
        return inputs, attrs
    if op_type == "Split" and "num_outputs" in attrs:
        sizes = _split_sizes(g, inputs[0], attrs, outputs)
        if "split" in target.attributes:
            attrs["split"] = sizes
        else:
            inputs = [inputs[0], g.op("Constant", value_t=torch.tensor(sizes, dtype=torch.int64))]
    target_inputs = [formal.name for formal in target.inputs]
    kept = []
    for formal, value in zip(recorded.inputs, inputs):
        if formal.name in target_inputs:
            kept.append(value)
        elif value is None:
            continue
        elif formal.name in target.attributes:  # e.g. ReduceMax axes: an input at 18, an attribute before
            attrs[formal.name] = _constant_list(value, op_type, formal.name)
        else:
            raise BridgeError(f"{op_type} has no input '{formal.name}' at opset {g.opset}")
    for name in [n for n in attrs if n not in target.attributes]:
        if attrs[name] != _attribute_default(recorded, name):
            raise BridgeError(f"{op_type} at opset {g.opset} has no attribute '{name}' (torch_lib sets it to "
                              f"{attrs[name]!r})")
        del attrs[name]
    if op_type in ("ScatterElements", "ScatterND") and attrs.get("reduction") in ("min", "max", b"min", b"max"):
        raise BridgeError(f"{op_type} reduction={attrs['reduction']!r} needs opset 18")
    return kept, attrs


class _Replayer:
    """Emits ONNX NodeProtos (standard domain) with g.op; inlines torch_lib functions."""

    def __init__(self, g, functions: dict[tuple[str, str], onnx.FunctionProto]) -> None:
        self.g, self.functions = g, functions

    def node(self, node: onnx.NodeProto, env: dict[str, Any], outer_attrs: dict[str, Any]) -> None:
        attrs: dict[str, Any] = {}
        for attribute in node.attribute:
            if attribute.ref_attr_name:
                if attribute.ref_attr_name in outer_attrs:
                    attrs[attribute.name] = outer_attrs[attribute.ref_attr_name]
                continue
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise BridgeError(f"{node.op_type} has a subgraph; the bridge does not replay those")
            attrs[attribute.name] = onnx_helper.get_attribute_value(attribute)
        inputs = [env[name] if name else None for name in node.input]
        key = (node.domain, node.op_type)
        if node.domain not in ("", "ai.onnx"):
            if key not in self.functions:
                raise BridgeError(f"no body for function {node.domain}::{node.op_type}")
            outputs = self.function(self.functions[key], inputs, attrs)
        else:
            outputs = _emit_at_opset(self.g, node.op_type, inputs, attrs, len(node.output))
        for name, value in zip(node.output, outputs):
            if name:
                env[name] = value

    def function(self, proto: onnx.FunctionProto, inputs: Sequence[Any], attrs: dict[str, Any]) -> list[Any]:
        for attribute in proto.attribute_proto:  # defaults of the function's attributes
            attrs.setdefault(attribute.name, onnx_helper.get_attribute_value(attribute))
        env = {name: value for name, value in zip(proto.input, inputs) if name}
        for node in proto.node:
            self.node(node, env, attrs)
        return [env[name] for name in proto.output]


def load_torchlib() -> None:
    """Import torch_lib's ops now (about half a second, once per process). `fix --auto` does it in
    the worker before it forks its trials, so that no trial pays it again."""
    from onnxscript.function_libs.torch_lib.ops import common  # noqa: F401


def _function_protos(functions) -> dict[tuple[str, str], onnx.FunctionProto]:
    """FunctionProtos of recorded scripted functions and the torch_lib helpers they call."""
    from onnxscript.function_libs.torch_lib.ops import common

    table: dict[tuple[str, str], onnx.FunctionProto] = {}
    candidates = list(functions) + [getattr(common, n) for n in dir(common)
                                    if hasattr(getattr(common, n), "to_function_proto")]
    for function in candidates:
        try:
            proto = function.to_function_proto()
        except Exception:  # traced functions without a body
            continue
        table[(proto.domain, proto.name)] = proto
    return table


def _node_schema(node: torch._C.Node, arity: int) -> torch._C.FunctionSchema:
    """The node's schema, or the first functional overload with ``arity`` arguments."""
    try:
        return torch._C.parse_schema(node.schema())
    except RuntimeError:
        pass
    for schema in torch._C._jit_get_schemas_for_operator(node.kind().rstrip("_")):
        if len(schema.arguments) == arity and not any(a.is_out for a in schema.arguments):
            return schema
    raise BridgeError(f"no schema of {node.kind()} takes {arity} arguments")


def _node_arguments(schema: torch._C.FunctionSchema, args: Sequence[Any]) -> list[Any]:
    """The node's inputs as torch_lib takes them: tensors (and scalars computed at run time) stay
    graph values, tensor lists become Python lists of them, constants Python values."""
    found: list[Any] = []
    for argument, value in zip(schema.arguments, args):
        type_text = _schema_type(str(argument.type))
        if symbolic_helper._is_none(value):
            found.append(None)
        elif type_text == "Tensor[]":
            if not symbolic_helper._is_packed_list(value):
                raise BridgeError(f"argument {argument.name} is not a list built in the graph")
            found.append([None if symbolic_helper._is_none(v) else v for v in symbolic_helper._unpack_list(value)])
        elif type_text == "Tensor":
            found.append(value)
        elif any(word in type_text for word in _IGNORED_TYPES):
            found.append(None)  # torch_lib ignores layout, device and memory format
        elif "ScalarType" in type_text or argument.name == "dtype":
            constant = _python_argument(value, "int")
            found.append(_type_utils.JitScalarType(constant).onnx_type() if isinstance(constant, int) else constant)
        else:
            found.append(_python_argument(value, type_text))
    return found


_IGNORED_TYPES = ("Layout", "Device", "MemoryFormat")


class _RecordedArithmetic:
    """``a + b``, ``-a``, ... on recorded values, as torch_lib functions write them, recorded as ONNX ops."""

    def __init__(self, opset) -> None:
        self.opset = opset

    def Add(self, lhs, rhs):
        return self.opset.Add(lhs, rhs)

    def Sub(self, lhs, rhs):
        return self.opset.Sub(lhs, rhs)

    def Mul(self, lhs, rhs):
        return self.opset.Mul(lhs, rhs)

    def Div(self, lhs, rhs):
        return self.opset.Div(lhs, rhs)

    def Neg(self, operand):
        return self.opset.Neg(operand)


def record_torchlib(g, function, arguments: Sequence[Any], complex_layout: bool = False) -> list[Any]:
    """Run torch_lib ``function`` on ``arguments`` (graph values, lists of them, Python constants)
    with torch's ONNX-IR recorder and emit what it recorded into ``g``; the output values.
    ``complex_layout``: complex values are handed over in their real layout."""
    from onnxscript import evaluator
    from onnxscript.onnx_opset import opset18
    from torch.onnx._internal._lazy_import import onnx_ir as ir
    from torch.onnx._internal.exporter import _building

    ir_to_jit: dict[int, torch._C.Value] = {}

    def to_ir(value: Any) -> Any:
        if isinstance(value, torch._C.Value):
            ir_value = _ir_value(value, f"input_{len(ir_to_jit)}", complex_layout)
            ir_to_jit[id(ir_value)] = value
            return ir_value
        if isinstance(value, (list, tuple)):
            return [to_ir(v) for v in value]
        return value

    recorder = _building.OpRecorder(opset18, {})
    previous_handler = ir.set_value_magic_handler(_RecordedArithmetic(opset18))
    try:
        with evaluator.default_as(recorder):
            result = function(*[to_ir(a) for a in arguments])  # ATen order; 'self' cannot be a keyword
    except BridgeError:
        raise
    except Exception as error:
        name = f"torch_lib's {function.name}" if hasattr(function, "name") else "the ONNX function"
        raise BridgeError(f"{name} cannot be recorded for these arguments: "
                          f"{type(error).__name__}: {str(error)[:200]}") from error
    finally:
        ir.set_value_magic_handler(previous_handler)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    model = ir.serde.serialize_graph(ir.Graph([], [], nodes=recorder.nodes, name="bridge"))
    env: dict[str, Any] = {}
    for ir_node in recorder.nodes:
        for ir_input in ir_node.inputs:
            if ir_input is not None and id(ir_input) in ir_to_jit:
                env[ir_input.name] = ir_to_jit[id(ir_input)]
    replayer = _Replayer(g, _function_protos(recorder.functions.values()))
    for proto_node in model.node:
        replayer.node(proto_node, env, {})
    return [env[out.name] if out.name in env else ir_to_jit[id(out)] for out in outputs]


def emit_torchlib(g, args: Sequence[Any], target: str | None = None):
    """Emit the torch_lib implementation of ``g.original_node`` (or ``target``) into ``g``."""
    node = g.original_node
    schema = _node_schema(node, len(args))
    kind = target or node.kind().rstrip("_")
    function = torchlib_function(kind, schema.overload_name if not target else "")
    values = record_torchlib(g, function, _node_arguments(schema, args))
    return values[0] if len(values) == 1 else tuple(values)


def emit_onnx_function(g, args: Sequence[Any], function, complex_layout: bool = False) -> Any:
    """Emit ``function`` (an ONNX function in onnxscript's trace mode, taking the node's ATen
    arguments in schema order, as the dynamo exporter calls it) for ``g.original_node``;
    ``complex_layout``: a function for complex values, which it takes in their real layout."""
    schema = _node_schema(g.original_node, len(args))
    values = record_torchlib(g, function, _node_arguments(schema, args), complex_layout)
    return values[0] if len(values) == 1 else tuple(values)


def takes_complex_tensors(g) -> bool:
    """Whether the TorchScript node being exported has a complex tensor among its inputs."""
    for value in g.original_node.inputs():
        value_type = value.type()
        if isinstance(value_type, torch._C.TensorType) and value_type.dtype() is not None \
                and value_type.dtype().is_complex:
            return True
    return False


def torch_symbolic(g):
    """torch's own symbolic for the node being exported, at the export's opset."""
    from torch.onnx._internal.torchscript_exporter import registration

    functions = registration.registry.get_function_group(g.original_node.kind())._functions._base
    return functions[max(v for v in functions if v <= g.opset)]


class TorchlibSteps:
    """The decomposition replay's fallback for steps without a symbolic: their torch_lib function
    (see :class:`fixport.symbolics.synthesis.replay.StepFallback`)."""

    def handles(self, op: torch._ops.OpOverload) -> bool:
        try:
            torchlib_function(op._schema.name, op._schema.overload_name)
        except BridgeError:
            return False
        return True

    def __call__(self, g, op: torch._ops.OpOverload, arguments: list) -> list:
        function = torchlib_function(op._schema.name, op._schema.overload_name)
        return record_torchlib(g, function, [_as_torchlib_constant(a) for a in arguments])


def _as_torchlib_constant(value: Any) -> Any:
    """A traced step's Python argument as torch_lib takes it: dtypes as ONNX type numbers; layout,
    device and memory format (which torch_lib ignores) as None."""
    if isinstance(value, torch.dtype):
        return _type_utils.JitScalarType.from_dtype(value).onnx_type()
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return None
    if isinstance(value, list):
        return [_as_torchlib_constant(v) for v in value]
    return value
