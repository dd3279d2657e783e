"""Turn a ``torch._C.Graph`` into the neutral :class:`fixport.core.words.graph.Graph`.

Every TorchScript node gets a stable *instance key* (scope + source line + kind +
occurrence). The key is the node's id in the neutral graph: it survives re-tracing, so
mappings saved in a project and values captured in a separate run find the same node.
"""
from __future__ import annotations

import functools
import os
import re
import weakref
from collections import Counter
from collections.abc import Iterable
from typing import Any

import torch
from torch.onnx._internal.torchscript_exporter.symbolic_helper import _node_get

from fixport.core.exporters.torchscript.script_part import all_nodes
from fixport.core.loaders.source_frames import TORCH_TO_NUMPY_DTYPE, is_library_frame
from fixport.core.words import vocabulary
from fixport.core.words.graph import Graph, Node, Value
from fixport.core.words.vocabulary import PYTHON_OP_KIND, instance_key, scope_from_torchscript

_FRAME_RE = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.+)$")
@functools.lru_cache(maxsize=8192)  # many nodes share one traced stack: parse each once
def user_source_line(source_range: str) -> str:
    """The first 'file.py:line' of the traced stack that is the user's code, not torch's.

    Only the file's base name is kept: instance keys built from it stay valid when the
    project moves to another folder or machine.
    """
    frames = [m for m in (_FRAME_RE.match(line.strip()) for line in source_range.splitlines()) if m]
    for match in frames:
        path = match["file"]
        if not is_library_frame(path):
            return f"{os.path.basename(path)}:{match['line']}"
    if frames:
        return f"{os.path.basename(frames[0]['file'])}:{frames[0]['line']}"
    return ""


def python_op_name(node: torch._C.Node) -> str:
    """The autograd.Function name of a prim::PythonOp node."""
    try:
        return node.pyname()
    except (AttributeError, RuntimeError):
        return ""


def display_kind(node: torch._C.Node) -> str:
    """'aten::relu', or 'prim::PythonOp[MyClip]' for an autograd.Function."""
    kind = node.kind()
    return vocabulary.display_kind(kind, python_op_name(node) if kind == PYTHON_OP_KIND else None)


def instance_base(node: torch._C.Node) -> str:
    """'scope|source|kind': what identifies a node up to its occurrence number."""
    kind = display_kind(node)
    if kind.endswith("_") and not kind.endswith("__"):
        kind = kind[:-1]  # in-place ops are converted as their out-of-place twins (relu_ -> relu)
    return vocabulary.instance_base(scope_from_torchscript(node.scopeName()), user_source_line(node.sourceRange()),
                                    kind)


def instance_keys(nodes: Iterable[torch._C.Node]) -> dict[torch._C.Node, str]:
    """Stable keys 'scope|source|kind|occurrence' for the given nodes, in order."""
    seen: Counter[str] = Counter()
    keys: dict[torch._C.Node, str] = {}
    for node in nodes:
        base = instance_base(node)
        keys[node] = instance_key(base, seen[base])
        seen[base] += 1
    return keys


def value_info(value: torch._C.Value, name: str | None = None) -> Value:
    """Dtype and shape of a TorchScript value, where the trace recorded them."""
    value_type = value.type()
    dtype = None
    shape = None
    if isinstance(value_type, torch._C.TensorType):
        scalar = value_type.scalarType()
        dtype = TORCH_TO_NUMPY_DTYPE.get(scalar, scalar.lower() if scalar else None)
        sizes = value_type.varyingSizes()
        shape = tuple(sizes) if sizes is not None else None
    elif value_type.kind() in ("IntType", "FloatType", "BoolType"):
        dtype = value_type.kind().removesuffix("Type").lower()
        shape = ()
    return Value(name=name if name is not None else value.debugName(), dtype=dtype, shape=shape)


def _attribute_value(node: torch._C.Node, name: str) -> Any:
    try:
        raw = _node_get(node, name)
    except (RuntimeError, AttributeError, TypeError):
        return f"<{node.kindOf(name)}>"
    if isinstance(raw, torch.Tensor):
        return raw.tolist() if raw.numel() <= 16 else f"tensor{tuple(raw.shape)} {raw.dtype}"
    if isinstance(raw, (int, float, str, bool)) or raw is None:
        return raw
    if isinstance(raw, (list, tuple)):
        return [item if isinstance(item, (int, float, str, bool)) else str(item) for item in raw]
    return str(raw)


def torchscript_to_graph(graph: torch._C.Graph, keys: dict[torch._C.Node, str] | None = None,
                         user_input_count: int | None = None, nodes: list[torch._C.Node] | None = None) -> Graph:
    """Convert a TorchScript graph; node ids are instance keys. The exporter lifts weights into
    graph inputs after the user's ones: with ``user_input_count``, those stay plain values.
    ``nodes`` is :func:`all_nodes` of the graph when the caller has it already."""
    nodes = nodes if nodes is not None else all_nodes(graph)
    keys = keys if keys is not None else instance_keys(nodes)
    result = Graph(kind="torchscript")
    for value in graph.inputs():
        if value.type().kind() == "ClassType":  # the module's `self`
            continue
        result.values[value.debugName()] = value_info(value)
        if user_input_count is None or len(result.inputs) < user_input_count:
            result.inputs.append(value.debugName())
    for node in nodes:
        outputs = []
        for value in node.outputs():
            name = value.debugName()
            result.values[name] = value_info(value, name)
            outputs.append(name)
        attributes = {name: _attribute_value(node, name) for name in node.attributeNames()}
        if node.kind() == PYTHON_OP_KIND:
            attributes["name"] = python_op_name(node)
        result.nodes.append(Node(
            id=keys[node],
            kind=node.kind(),
            name=display_kind(node),
            inputs=[value.debugName() for value in node.inputs()],
            outputs=outputs,
            attributes=attributes,
            scope=scope_from_torchscript(node.scopeName()),
            source=user_source_line(node.sourceRange()),
        ))
    result.outputs = [value.debugName() for value in graph.outputs()]
    return result


_last_conversion: tuple[weakref.ref, tuple, Graph] | None = None


def torchscript_graph_of(source: Any, context: tuple, graph: torch._C.Graph, keys: dict[torch._C.Node, str],
                         user_input_count: int | None, nodes: list[torch._C.Node]) -> Graph:
    """:func:`torchscript_to_graph`, or the last result when the same ``source`` module traced to
    the same nodes, with the same input types, in the same ``context`` (export options): a
    re-export after Apply traces what it traced before."""
    global _last_conversion
    signature = (context, tuple(keys[node] for node in nodes), tuple(str(v.type()) for v in graph.inputs()),
                 user_input_count)
    last = _last_conversion
    if source is not None and last is not None and last[0]() is source and last[1] == signature:
        return last[2]
    converted = torchscript_to_graph(graph, keys, user_input_count, nodes)
    try:
        _last_conversion = (weakref.ref(source), signature, converted) if source is not None else None
    except TypeError:  # an object that takes no weak reference: convert every time
        _last_conversion = None
    return converted
