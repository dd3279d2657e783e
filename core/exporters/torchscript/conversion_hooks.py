"""Hooks into the TorchScript exporter's per-node conversion.

``_jit_pass_onnx`` is wrapped to see the TorchScript graph exactly as the exporter converts
it; ``_run_symbolic_function`` is wrapped to tag every ONNX node a conversion adds with the
instance key of its TorchScript node (provenance) and, when diagnosing, to record a failing
conversion and emit a placeholder node instead of stopping at the first error.
"""
from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.onnx._internal.torchscript_exporter import jit_utils, registration
from torch.onnx._internal.torchscript_exporter import utils as exporter_utils

from fixport.core.exporters.torchscript.bfloat16_casts import bfloat16_casts_renumbered
from fixport.core.exporters.torchscript.low_precision_attention import (
    convert_with_mask_in_query_dtype,
    needs_mask_in_query_dtype,
)
from fixport.core.exporters.torchscript.script_part import all_nodes
from fixport.core.exporters.torchscript.source_graph import (
    instance_base,
    instance_keys,
    python_op_name,
    torchscript_graph_of,
    user_source_line,
)
from fixport.core.onnx_io.onnx_graph import (
    PLACEHOLDER_DOMAIN,
    PLACEHOLDER_OP,
    PROVENANCE_ATTRIBUTE,
)
from fixport.core.words.graph import Graph
from fixport.core.words.vocabulary import (
    COMPLEX_TENSORS_NOTE,
    PYTHON_OP_KIND,
    base_of_instance_key,
    kind_of_instance_base,
    python_op_kind,
    scope_from_torchscript,
)


@dataclass
class ConversionFailure:
    """One TorchScript node whose symbolic was missing or raised."""

    kind: str
    instance: str
    scope: str
    source: str
    message: str
    exception_type: str
    python_op_name: str = ""


@dataclass
class ConversionRecord:
    """What the hooks saw during one export."""

    torchscript_graph: Graph | None = None
    failures: list[ConversionFailure] = field(default_factory=list)
    instance_key_of: dict[torch._C.Node, str] = field(default_factory=dict)
    node_of_key: dict[str, torch._C.Node] = field(default_factory=dict)
    converting: tuple[torch._C.Node, str] | None = None  # the node whose symbolic runs now
    diagnose: bool = False
    on_traced: Callable[[Graph], None] | None = None  # told as soon as the traced graph is known
    has_complex: bool = True  # whether any traced value is complex (False skips a per-node check)
    unserializable: list[ConversionFailure] = field(default_factory=list)  # nodes whose values ONNX cannot type
    _unclaimed: dict[str, list[str]] = field(default_factory=dict)

    def set_graph_keys(self, keys: dict[torch._C.Node, str]) -> None:
        self.instance_key_of = keys
        self.node_of_key = {key: node for node, key in keys.items()}
        self._unclaimed = {}
        for key in keys.values():
            self._unclaimed.setdefault(base_of_instance_key(key), []).append(key)

    def claim_base_suffix(self, kind: str) -> str:
        """Claim the next unclaimed key, in graph order, whose kind part is ``kind``."""
        for key in self.instance_key_of.values():
            base = base_of_instance_key(key)
            if kind_of_instance_base(base) == kind and key in self._unclaimed.get(base, ()):
                self._unclaimed[base].remove(key)
                return key
        return ""

    def key_for(self, node: torch._C.Node) -> str:
        """The node's instance key. Symbolics such as onnx::Placeholder's convert *clones* of
        the nodes in their blocks; a clone takes the next key of the same scope/source/kind."""
        key = self.instance_key_of.get(node)
        if key is None:
            pending = self._unclaimed.get(instance_base(node))
            key = pending[0] if pending else ""
        if key:
            pending = self._unclaimed.get(base_of_instance_key(key), [])
            if key in pending:
                pending.remove(key)
        return key

    @property
    def conversion_started(self) -> bool:
        return self.torchscript_graph is not None


_active_record: ConversionRecord | None = None
_UNCONVERTED_NAMESPACES = ("aten::", "prim::")
LOWEST_OPSET = 1


class PythonOpWithoutSymbolic(RuntimeError):
    """Raised for a prim::PythonOp that no symbolic handles."""


def _reject_python_op(g: jit_utils.GraphContext, *args: Any, **kwargs: Any) -> None:
    raise PythonOpWithoutSymbolic(f"Couldn't export Python operator {kwargs.get('name', '?')}")


@contextmanager
def _python_ops_reach_symbolic_function(opset: int) -> Iterator[None]:
    """Without any prim::PythonOp symbolic, C++ clones PythonOps and fails only at the end,
    on the first one; a rejecting symbolic makes each of them a recordable failure."""
    if registration.registry.is_registered_op(PYTHON_OP_KIND, opset):
        yield
        return
    registration.registry.register(PYTHON_OP_KIND, LOWEST_OPSET, _reject_python_op, custom=True)
    try:
        yield
    finally:
        registration.registry.unregister(PYTHON_OP_KIND, LOWEST_OPSET)


def current_instance_key(node: torch._C.Node) -> str:
    """Instance key of a node being converted right now ('' outside an export)."""
    record = _active_record
    if record is None:
        return ""
    if record.converting is not None and record.converting[0] is node:
        return record.converting[1]
    return record.instance_key_of.get(node, "")


@contextmanager
def conversion_hooks(*, diagnose: bool, opset: int, autograd_inlining: bool, user_input_count: int | None = None,
                     traced_from: Any = None, trace_context: tuple = (),
                     on_traced: Callable[[Graph], None] | None = None) -> Iterator[ConversionRecord]:
    """Install the hooks for the duration of one export (exports are not re-entrant)."""
    # With inlining on, torch inlines every Function that has no symbolic -- but only while no
    # prim::PythonOp symbolic is registered; registering one would turn them into failures.
    if diagnose and not autograd_inlining:
        with _python_ops_reach_symbolic_function(opset), _hooks(True, user_input_count, on_traced,
                                                                 traced_from, trace_context) as record:
            yield record
    else:
        with _hooks(diagnose, user_input_count, on_traced, traced_from, trace_context) as record:
            yield record


@contextmanager
def _hooks(diagnose: bool, user_input_count: int | None, on_traced: Callable[[Graph], None] | None = None,
           traced_from: Any = None, trace_context: tuple = ()) -> Iterator[ConversionRecord]:
    global _active_record
    record = ConversionRecord(diagnose=diagnose, on_traced=on_traced)
    original_pass = torch._C._jit_pass_onnx
    original_run = exporter_utils._run_symbolic_function

    def jit_pass_onnx(graph: torch._C.Graph, operator_export_type: Any) -> torch._C.Graph:
        nodes = all_nodes(graph)
        record.set_graph_keys(instance_keys(nodes))
        record.torchscript_graph = torchscript_graph_of(traced_from, trace_context, graph, record.instance_key_of,
                                                        user_input_count, nodes)
        record.has_complex = any((v.dtype or "").startswith("complex")
                                 for v in record.torchscript_graph.values.values())
        if record.on_traced is not None:
            record.on_traced(record.torchscript_graph)
        return original_pass(graph, operator_export_type)

    def run_symbolic_function(graph, block, node, inputs, env, values_in_env, new_nodes,
                              operator_export_type=torch._C._onnx.OperatorExportTypes.ONNX):
        first_new = len(new_nodes)
        key = record.key_for(node)
        record.converting = (node, key)
        try:
            if diagnose and record.has_complex:
                _refuse_complex_blind_symbolic(node)
            if needs_mask_in_query_dtype(node, inputs) and _overridden(node.kind()) is False:
                outputs = convert_with_mask_in_query_dtype(original_run, graph, block, node, inputs, env,
                                                           values_in_env, new_nodes, operator_export_type)
            else:
                outputs = original_run(graph, block, node, inputs, env, values_in_env, new_nodes,
                                       operator_export_type)
        except Exception as exc:
            if not diagnose:
                raise
            record.failures.append(_failure(node, key, exc))
            outputs = _emit_placeholder(graph, block, node, inputs, env, values_in_env, new_nodes)
        tag_new_nodes(new_nodes[first_new:], key)
        return outputs

    original_export_onnx = torch._C.Graph._export_onnx

    def export_onnx(graph: torch._C.Graph, *args: Any, **kwargs: Any) -> Any:
        try:
            return original_export_onnx(graph, *args, **kwargs)
        except Exception as exc:  # torch's serializer names no node: find the values it refused
            record.unserializable = unserializable_values(graph, str(exc), record)
            if not (diagnose and record.unserializable):
                raise
            # Diagnosis goes on past them, as past a node no symbolic converts: the rest of the
            # model is written and diagnosed with placeholders where those values were made.
            replace_with_placeholders(graph, str(exc))
            return original_export_onnx(graph, *args, **kwargs)

    torch._C._jit_pass_onnx = jit_pass_onnx
    exporter_utils._run_symbolic_function = run_symbolic_function
    torch._C.Graph._export_onnx = export_onnx
    _active_record = record
    try:
        with bfloat16_casts_renumbered():
            yield record
    finally:
        torch._C._jit_pass_onnx = original_pass
        exporter_utils._run_symbolic_function = original_run
        torch._C.Graph._export_onnx = original_export_onnx
        _active_record = None


_UNEXPECTED_SCALAR_TYPE = re.compile(r"ScalarType (\w+) is an unexpected tensor scalar type")


def unserializable_values(graph: torch._C.Graph, message: str, record: ConversionRecord) -> list[ConversionFailure]:
    """The TorchScript nodes whose conversion made a value of a type ONNX has no tensor of, where the
    model itself has none (torch's serializer says only the type): each ONNX node holding one is
    traced to its source node by the provenance tag on it or, for a node a later pass made
    (constant folding), on a node reading it."""
    found = _UNEXPECTED_SCALAR_TYPE.search(message)
    if found is None:
        return []
    scalar_type = found.group(1)
    if scalar_type.startswith("Complex") and record.has_complex:
        return []  # the model's own complex values: its code must return real ones, no node's fix helps
    failures: dict[str, ConversionFailure] = {}
    for node, key in _nodes_making(graph, scalar_type):
        source = record.node_of_key.get(key)
        if source is None or key in failures:
            continue
        failures[key] = _failure(source, key, RuntimeError(
            f"torch's conversion of this node makes a {scalar_type} value ({node.kind()}), which ONNX has no "
            f"tensor type for, so torch.onnx.export fails when it writes the model (\"{found.group(0)}\"). "
            f"What to do: `fix --auto` tries the built-in fixes for this node (each writes it with its own "
            f"constants); or export the model in float32 (`model.float()` in build()), where torch's "
            f"conversion makes no such value"))
    return list(failures.values())


def replace_with_placeholders(graph: torch._C.Graph, message: str) -> None:
    """Each ONNX node making a value of the type torch's serializer refused (``message`` names it)
    becomes a placeholder of the same inputs, provenance and (serializable) output types."""
    found = _UNEXPECTED_SCALAR_TYPE.search(message)
    if found is None:
        return
    for node, key in _nodes_making(graph, found.group(1)):
        placeholder = graph.create(f"{PLACEHOLDER_DOMAIN}::{PLACEHOLDER_OP}", list(node.inputs()), node.outputsSize())
        placeholder.s_("kind", node.kind())
        if key:
            placeholder.s_(PROVENANCE_ATTRIBUTE, key)
        placeholder.insertBefore(node)
        for new_value, old_value in zip(placeholder.outputs(), node.outputs()):
            new_value.setType(serializable_type(old_value.type()))
            old_value.replaceAllUsesWith(new_value)
        node.destroy()


def _nodes_making(graph: torch._C.Graph, scalar_type: str) -> list[tuple[torch._C.Node, str]]:
    """The nodes with an output of ``scalar_type``, each with the provenance key on it or on a
    node reading that output ("" where neither has one)."""
    nodes = all_nodes(graph)
    readers: dict[torch._C.Value, list[torch._C.Node]] = {}
    for node in nodes:
        for value in node.inputs():
            readers.setdefault(value, []).append(node)
    making = []
    for node in nodes:
        bad = [value for value in node.outputs() if _scalar_type_name(value) == scalar_type]
        if bad:
            making.append((node, next((_provenance(n) for n in [node, *readers.get(bad[0], [])] if _provenance(n)),
                                      "")))
    return making


def _scalar_type_name(value: torch._C.Value) -> str:
    value_type = value.type()
    if not isinstance(value_type, torch._C.TensorType):
        return ""
    return value_type.scalarType() or ""


def _provenance(node: torch._C.Node) -> str:
    return node.s(PROVENANCE_ATTRIBUTE) if node.hasAttribute(PROVENANCE_ATTRIBUTE) else ""


class ComplexIgnored(RuntimeError):
    """torch's symbolic would convert an op on complex tensors as if they were real."""


def _refuse_complex_blind_symbolic(node: torch._C.Node) -> None:
    """An aten op taking complex tensors, about to run torch's own symbolic: ONNX has no complex
    type, the tensor is a real one with a trailing (real, imaginary) axis, and torch's symbolics
    (Mul, Slice, Reshape, ...) treat that axis as data, so the numbers would silently be wrong.
    A fix registered for the op (a complex-aware template) is trusted."""
    if not node.kind().startswith("aten::") or not any(_is_complex(v) for v in node.inputs()):
        return
    if _overridden(node.kind()) is not False:
        return  # no symbolic at all (the exporter says so itself), or a fix registered for the op
    raise ComplexIgnored(f"{node.kind()} {COMPLEX_TENSORS_NOTE}: torch's symbolic would treat the (real, imaginary) "
                         "pair ONNX carries them as as plain numbers; it needs a complex-aware fix")


def _overridden(kind: str) -> bool | None:
    """Whether a fix overrides torch's symbolic for ``kind`` at this export's opset (None: no symbolic)."""
    group = registration.registry.get_function_group(kind)
    if group is None:
        return None
    opset = exporter_utils.GLOBALS.export_onnx_opset_version
    version = registration._dispatch_opset_version(opset, list(group._functions))
    return None if version is None else group._functions.overridden(version)


def _is_complex(value: torch._C.Value) -> bool:
    value_type = value.type()
    if not isinstance(value_type, torch._C.TensorType):
        return False
    dtype = value_type.dtype()
    return dtype is not None and dtype.is_complex


def tag_new_nodes(new_nodes: list[torch._C.Node], key: str) -> None:
    """Mark the ONNX nodes one conversion added with the instance key of its TorchScript node."""
    for new_node in new_nodes:
        # aten/prim nodes here are not converted yet (an inlined autograd.Function's body);
        # an extra attribute on them breaks serialization. Their ONNX nodes get tagged later.
        if key and not new_node.kind().startswith(_UNCONVERTED_NAMESPACES):
            new_node.s_(PROVENANCE_ATTRIBUTE, key)


def claim_python_op_key(function_name: str) -> str:
    """Instance key of the next prim::PythonOp node of ``function_name`` (conversion runs in
    graph order); for static ``symbolic`` methods, which torch calls without the node."""
    record = _active_record
    return record.claim_base_suffix(python_op_kind(function_name)) if record is not None else ""


def node_for_key(key: str) -> torch._C.Node | None:
    """The TorchScript node with instance key ``key`` in the export running now."""
    record = _active_record
    return record.node_of_key.get(key) if record is not None and key else None


def static_symbolic_failed(g: jit_utils.GraphContext, key: str, function_name: str, exc: Exception,
                           args: tuple) -> Any:
    """Record a failing static symbolic in a diagnosing export (else re-raise) and stand in a
    placeholder with as many outputs as the TorchScript node had."""
    record = _active_record
    if record is None or not record.diagnose:
        raise exc
    node = record.torchscript_graph.node_by_id.get(key) if record.torchscript_graph else None
    message = _blaming_the_fix(exc, str(exc))
    record.failures.append(ConversionFailure(
        kind=PYTHON_OP_KIND, instance=key, scope=node.scope if node else "", source=node.source if node else "",
        message=message, exception_type=type(exc).__name__, python_op_name=function_name))
    values = [a for a in args if isinstance(a, torch._C.Value) and isinstance(a.type(), torch._C.TensorType)]
    outputs = len(node.outputs) if node else 1
    return g.op(f"{PLACEHOLDER_DOMAIN}::{PLACEHOLDER_OP}", *values, kind_s=PYTHON_OP_KIND, outputs=outputs)


def _blaming_the_fix(exc: Exception, message: str) -> str:
    """When a fix's own symbolic raised, say which fix and at which of its lines."""
    in_fix = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename.startswith("<template ")]
    if not in_fix:
        return message
    frame = in_fix[-1]
    return (f"The fix {frame.filename.strip('<>').removeprefix('template ')} raised at line {frame.lineno}: "
            f"{type(exc).__name__}: {message}")


def _failure(node: torch._C.Node, key: str, exc: Exception) -> ConversionFailure:
    message = _blaming_the_fix(exc, str(exc).split("  [Caused by", 1)[0].strip())
    return ConversionFailure(
        kind=node.kind(),
        instance=key,
        scope=scope_from_torchscript(node.scopeName()),
        source=user_source_line(node.sourceRange()),
        message=message,
        exception_type=type(exc).__name__,
        python_op_name=python_op_name(node) if node.kind() == PYTHON_OP_KIND else "",
    )


def _emit_placeholder(graph, block, node, inputs, env, values_in_env, new_nodes):
    """A 'fixport::Unsupported' node with the original output types, so export goes on."""
    context = jit_utils.GraphContext(
        graph=graph, block=block, opset=exporter_utils.GLOBALS.export_onnx_opset_version,
        original_node=node, params_dict=exporter_utils._params_dict, env=env,
        values_in_env=values_in_env, new_nodes=new_nodes)
    values = _tensor_inputs(inputs)
    outputs = context.op(f"{PLACEHOLDER_DOMAIN}::{PLACEHOLDER_OP}", *values,
                         kind_s=node.kind(), outputs=node.outputsSize())
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for new_value, old_value in zip(outputs, node.outputs()):
        new_value.setType(serializable_type(old_value.type()))
    return outputs if len(outputs) > 1 else outputs[0]


# dtypes ONNX has no tensor type for, and the real dtype a placeholder carries them as.
_COMPLEX_AS_REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
_QUANTIZED_AS_INTEGER = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32,
                         torch.quint4x2: torch.uint8, torch.quint2x4: torch.uint8}
COMPLEX_TRAILING_DIM = 2  # (real, imaginary), as torch.view_as_real lays them out


def serializable_type(value_type: Any) -> Any:
    """A type the ONNX serializer accepts for a placeholder's value: complex tensors become
    real ones with a trailing dimension of 2, quantized ones their integer storage; packed
    parameters and other opaque objects an untyped tensor."""
    if isinstance(value_type, torch._C.ClassType):  # e.g. quantized Conv2dPackedParamsBase
        return torch._C.TensorType.get()
    if not isinstance(value_type, torch._C.TensorType):
        return value_type
    dtype = value_type.dtype()
    if dtype in _COMPLEX_AS_REAL:
        sizes = value_type.sizes()
        real = value_type.with_dtype(_COMPLEX_AS_REAL[dtype])
        return real.with_sizes([*sizes, COMPLEX_TRAILING_DIM]) if sizes is not None else real
    if dtype in _QUANTIZED_AS_INTEGER:
        return value_type.with_dtype(_QUANTIZED_AS_INTEGER[dtype])
    return value_type



def _tensor_inputs(inputs: list[Any]) -> list[torch._C.Value]:
    """The tensors flowing into a node, with tensor lists (einsum's operands) unpacked.

    Only tensors: lists, tuples and scalars (pad sizes, a Function's float argument, the
    packed parameters of a quantized op) trip the serializer, and without the unpacked lists
    the placeholder would lose its dataflow.
    """
    values: list[torch._C.Value] = []
    for value in inputs:
        if not isinstance(value, torch._C.Value):
            continue
        if value.node().kind() in _PACKING_KINDS:  # the tuple may be typed Tensor (quantized packed params)
            values.extend(v for v in value.node().inputs() if isinstance(v.type(), torch._C.TensorType)
                          and v.node().kind() not in _PACKING_KINDS)
        elif isinstance(value.type(), torch._C.TensorType):
            values.append(value)
    return values


# Nodes that pack values for a symbolic to take apart (einsum's operand list; the packed
# weights, bias and strides of quantized ops): a placeholder takes their tensors instead.
_PACKING_KINDS = frozenset({"prim::ListConstruct", "prim::TupleConstruct"})
