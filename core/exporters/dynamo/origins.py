"""Which captured op a node of the translated program came from.

torch.onnx decomposes the captured program against its registry before translating it, and some
of its decompositions end in ops no ONNX function exists for: ``aten::lgamma`` becomes
``prims::lgamma``, ``aten::cumprod`` becomes ``prims::prod``. The fix for such a node is a fix
for the captured op (Fixport's own decomposition of ``aten::lgamma``), tried on that op alone.
torch records the origin on every node it makes (``original_aten``, ``from_node``).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from fixport.core.exporters.dynamo.source_graph import fx_kind


def _sources(node_sources: Any) -> Iterator[Any]:
    """Every NodeSource in ``node_sources`` and in the ones they came from, nearest first."""
    for source in node_sources or ():
        yield source
        yield from _sources(getattr(source, "from_node", None))


def captured_origin(program: torch.export.ExportedProgram, node_name: str,
                    captured: torch.export.ExportedProgram) -> tuple[str, str] | None:
    """(kind, node name) of the op in ``captured`` that torch.onnx's decomposition turned into the
    node ``node_name`` of ``program``; None when that node is a captured op itself."""
    node = next((n for n in program.graph.nodes if n.name == node_name), None)
    if node is None:
        return None
    original = node.meta.get("original_aten")
    if not isinstance(original, torch._ops.OpOverload) or original is node.target:
        return None
    kind = fx_kind(original)
    if kind == fx_kind(node.target):  # the same op (a custom op's overload object is made anew)
        return None
    captured_nodes = {n.name: n for n in captured.graph.nodes if n.op == "call_function"}
    for source in _sources(node.meta.get("from_node")):
        found = captured_nodes.get(getattr(source, "name", None))
        if found is not None and fx_kind(found.target) == kind:
            return kind, found.name
    return None
