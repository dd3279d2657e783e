"""Turn an ``ExportedProgram``'s FX graph into the neutral :class:`fixport.core.words.graph.Graph`.

The dynamo exporter's left pane: aten ops after decomposition, grouped by the module path in
``nn_module_stack``, each with the user's source line from ``stack_trace``. Node ids are FX node
names, which the ONNX nodes torch emits carry in their metadata (``pkg.torch.onnx.name_scopes``).
"""
from __future__ import annotations

import operator
import os
import re
import traceback
from typing import Any, Final

import torch

from fixport.core.loaders.source_frames import TORCH_TO_NUMPY_DTYPE, is_library_frame
from fixport.core.words.graph import Graph, Node, Value
from fixport.core.words.vocabulary import SCOPE_SEPARATOR

FX_GRAPH_KIND: Final = "fx"
GETITEM_KIND = "prim::TupleUnpack"  # a plumbing kind: drawn as an edge, not a node
_STACK_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_SELF_PREFIXES = ("L['self'].", "L__self__.", "L__self___")


def fx_kind(target: Any) -> str:
    """'aten::add.Tensor' for an OpOverload; the qualified name for anything else."""
    if isinstance(target, torch._ops.OpOverload):
        namespace, name = target._schema.name.split("::", 1)
        overload = target._overloadname
        return f"{namespace}::{name}.{overload}"
    if target is operator.getitem:
        return GETITEM_KIND
    name = getattr(target, "__name__", str(target))
    return f"python::{name}"


def scope_of(node: torch.fx.Node) -> str:
    """'layer1/0/conv1' from the innermost ``nn_module_stack`` entry; '' at top level."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, _cls = list(stack.values())[-1]
    for prefix in _SELF_PREFIXES:
        path = path.removeprefix(prefix)
    return SCOPE_SEPARATOR.join(part for part in re.split(r"[.\[\]'\"]", path) if part)


def user_line_of_stack_trace(stack_trace: str | None) -> str:
    """'model.py:12': the innermost frame of ``stack_trace`` that is the user's code, not torch's."""
    frames = [(m["file"], m["line"]) for m in _STACK_FRAME_RE.finditer(stack_trace or "")]
    for path, line in reversed(frames):
        if not is_library_frame(path):
            return f"{os.path.basename(path)}:{line}"
    return ""


def user_line_of_exception(exc: BaseException) -> tuple[str, str]:
    """('model.py:12', 'if y.sum() > 0:'): the deepest user frame of ``exc`` and its chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = [f for f in traceback.extract_tb(current.__traceback__) if not is_library_frame(f.filename)]
        if frames:
            frame = frames[-1]
            return f"{os.path.basename(frame.filename)}:{frame.lineno}", (frame.line or "").strip()
        current = current.__cause__ or current.__context__
    match = list(_STACK_FRAME_RE.finditer(str(exc)))  # dynamo's "from user code:" block
    for found in reversed(match):
        if not is_library_frame(found["file"]):
            return f"{os.path.basename(found['file'])}:{found['line']}", ""
    return "", ""


def _value_of(name: str, meta_val: Any) -> Value:
    if isinstance(meta_val, torch.Tensor):
        dtype = str(meta_val.dtype).removeprefix("torch.")
        dtype = TORCH_TO_NUMPY_DTYPE.get(dtype, dtype)
        shape = tuple(int(d) if isinstance(d, int) else str(d) for d in meta_val.shape)
        return Value(name, dtype, shape)
    if isinstance(meta_val, (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)):
        return Value(name, type(meta_val).__name__.removeprefix("Sym").lower(), ())
    return Value(name)


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return str(value)


def fx_to_graph(program: torch.export.ExportedProgram, unsupported: set[str] | frozenset[str] = frozenset()) -> Graph:
    """Neutral graph of ``program``: call_function nodes with FX names as ids; user inputs as
    graph inputs (lifted weights stay plain values); nodes named in ``unsupported`` flagged."""
    graph = Graph(kind=FX_GRAPH_KIND)
    user_inputs = set(program.graph_signature.user_inputs)
    getitem_outputs: dict[str, dict[int, str]] = {}
    for node in program.graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[1], int):
            getitem_outputs.setdefault(node.args[0].name, {})[node.args[1]] = node.name
    for node in program.graph.nodes:
        graph.values[node.name] = _value_of(node.name, node.meta.get("val"))
        if node.op == "placeholder":
            if node.name in user_inputs:
                graph.inputs.append(node.name)
        elif node.op == "output":
            torch.fx.node.map_arg(node.args[0], lambda n: graph.outputs.append(n.name))
        elif node.op == "call_function" and not (node.target is operator.getitem
                                                 and node.args[0].name in getitem_outputs):
            graph.nodes.append(_node_of(node, getitem_outputs.get(node.name), node.name in unsupported))
    return graph


def _node_of(node: torch.fx.Node, unpacked: dict[int, str] | None, unsupported: bool) -> Node:
    outputs = [node.name] if not unpacked else [unpacked.get(i, "") for i in range(max(unpacked) + 1)]
    inputs = [n.name for n in node.all_input_nodes]
    attributes = {f"arg{i}": _plain(a) for i, a in enumerate(node.args) if not isinstance(a, torch.fx.Node)
                  and not (isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in a))}
    attributes.update({k: _plain(v) for k, v in node.kwargs.items() if not isinstance(v, torch.fx.Node)})
    return Node(id=node.name, kind=fx_kind(node.target), name=node.name, inputs=inputs, outputs=outputs,
                attributes=attributes, scope=scope_of(node),
                source=user_line_of_stack_trace(node.meta.get("stack_trace")), unsupported=unsupported)
