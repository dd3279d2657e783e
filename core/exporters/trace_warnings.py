"""TracerWarnings tied to the traced nodes they produced (no torch: the window and the CLI use it).

A TracerWarning says the trace recorded a Python value (a size turned into an int, a list, a
tensor made with ``torch.tensor``) as a constant at one line. The trace records that constant
where it is next used: the first traced node at that line, or the nearest line after it in the
same file. Those nodes, and the constants feeding them, are what the warning is about.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fixport.core.words.graph import Graph, Node

_TRACED_AT_RE = re.compile(r"^TracerWarning at ([^:]+:\d+): (.*)$", re.S)
# Said by a fix that keeps a value the trace would bake an input (symbolics/synthesis/runtime_scale.py):
# the line still reads the input's values, which the value check tries at other values.
KEPT_AT_RE = re.compile(r"^TracedValueKept at ([^:]+:\d+): ")
CONSTANT_KINDS = ("prim::Constant", "onnx::Constant")


@dataclass(frozen=True)
class TraceWarning:
    """One TracerWarning raised at a known line: 'file.py:12' and its first sentence."""

    line: str
    what: str

    @property
    def text(self) -> str:
        return f"TracerWarning at {self.line}: {self.what}"


def trace_warning(text: str) -> TraceWarning | None:
    """The TracerWarning in ``text`` ('TracerWarning at file.py:12: ...'), or None for other warnings."""
    match = _TRACED_AT_RE.match(text)
    return TraceWarning(match[1], match[2].split(". ")[0].strip()) if match else None


def trace_warnings(texts: list[str]) -> list[TraceWarning]:
    return [w for w in map(trace_warning, texts) if w is not None]


def kept_reads(texts: list[str]) -> set[str]:
    """The lines ('file.py:12') whose values a fix kept inputs of the traced graph."""
    return {match[1] for text in texts if (match := KEPT_AT_RE.match(text))}


def _place(source: str) -> tuple[str, int] | None:
    file, _, line = source.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else None


def nodes_it_produced(warning: TraceWarning, graph: Graph) -> list[Node]:
    """The traced nodes that use what ``warning``'s line recorded: those at its line, else at the
    nearest later line of the same file that has nodes (constants left out)."""
    at = _place(warning.line)
    if at is None:
        return []
    file, line = at
    later = [(place[1], node) for node in graph.nodes if node.kind not in CONSTANT_KINDS
             and (place := _place(node.source)) is not None and place[0] == file and place[1] >= line]
    if not later:
        return []
    nearest = min(number for number, _ in later)
    return [node for number, node in later if number == nearest]


def constants_into(node: Node, graph: Graph) -> list[Node]:
    """The constant nodes feeding ``node`` (where a baked value sits)."""
    producers = {output: other for other in graph.nodes for output in other.outputs}
    return [producers[name] for name in node.inputs if name in producers and producers[name].kind in CONSTANT_KINDS]


@dataclass
class BakedHere:
    """What the Inspector shows for a traced node a TracerWarning is about: the warnings, and the
    values of the constants feeding it (the baked value among them)."""

    warnings: list[TraceWarning]
    constants: list[object]


def baked_here(texts: list[str], graph: Graph | None, node: Node) -> BakedHere | None:
    """For ``node`` of the traced ``graph``, the TracerWarnings whose recorded constant it takes (None: none)."""
    found = warnings_by_node(texts, graph).get(node.id) if graph is not None else None
    if not found:
        return None
    return BakedHere(found, [c.attributes.get("value") for c in constants_into(node, graph)])


def warnings_by_node(texts: list[str], graph: Graph | None) -> dict[str, list[TraceWarning]]:
    """Node id -> the TracerWarnings about it, for every warning that can be tied to a node."""
    found: dict[str, list[TraceWarning]] = {}
    for warning in trace_warnings(texts):
        for node in nodes_it_produced(warning, graph) if graph is not None else []:
            found.setdefault(node.id, []).append(warning)
    return found
