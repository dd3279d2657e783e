"""One neutral graph model for TorchScript and ONNX graphs.

Loaders turn a traced ``torch._C.Graph`` and an ONNX ``ModelProto`` into these small
dataclasses; nothing above ``core/`` touches torch or protobuf objects. They pickle, so the
export worker can send them to the GUI process.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from fixport.core.words.vocabulary import scope_parts

if TYPE_CHECKING:
    import networkx

GraphKind = Literal["torchscript", "fx", "onnx"]  # the source graph (either exporter's) or the ONNX graph
# One of the two graphs side by side, whichever exporter made them: the model's source graph or its ONNX graph
GraphSide = Literal["source", "onnx"]
ONNX_DEFAULT_DOMAIN = "onnx"


@dataclass
class Value:
    """A tensor (or other value) flowing along an edge."""

    name: str
    dtype: str | None = None  # "float32", "int64", ... ; None when unknown
    shape: tuple[int | str | None, ...] | None = None  # str for symbolic dims

    def describe(self) -> str:
        """Short 'float32[1,3,224,224]' text for tooltips."""
        dims = "?" if self.shape is None else ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype or '?'}[{dims}]"


@dataclass
class Node:
    """One operation. ``kind`` is always 'domain::op', e.g. 'aten::conv2d', 'onnx::Conv'."""

    id: str
    kind: str
    name: str = ""
    inputs: list[str] = field(default_factory=list)  # value names; "" for an omitted input
    outputs: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)  # plain Python values
    scope: str = ""  # module path "layer1/0/conv1"; "" at top level
    source: str = ""  # "file.py:12" of the user's code, when known
    origin: list[str] = field(default_factory=list)  # ONNX nodes: ids of TorchScript nodes
    unsupported: bool = False  # a diagnosis placeholder or a node that cannot run

    @property
    def domain(self) -> str:
        return self.kind.split("::", 1)[0] if "::" in self.kind else ONNX_DEFAULT_DOMAIN

    @property
    def op_type(self) -> str:
        return self.kind.split("::", 1)[-1]

    @property
    def scope_parts(self) -> list[str]:
        return scope_parts(self.scope)


@dataclass
class Graph:
    """A whole graph: nodes in topological order plus the values between them."""

    kind: GraphKind
    nodes: list[Node] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    name: str = ""
    # What the user calls an input where the graph's own name differs (a trace's ``input.1``): the ONNX input names.
    input_labels: dict[str, str] = field(default_factory=dict)
    output_labels: dict[str, str] = field(default_factory=dict)  # likewise for outputs (a trace's ``key.1``)

    def label_inputs(self, names: list[str]) -> None:
        """Show the user's input names on the graph's inputs, in order (when there are as many)."""
        if len(names) == len(self.inputs):
            self.input_labels = {own: given for own, given in zip(self.inputs, names) if own != given}

    def label_outputs(self, names: list[str]) -> None:
        """Show the ONNX file's output names on the graph's outputs, in order (when there are as many)."""
        if len(names) == len(self.outputs):
            self.output_labels = {own: given for own, given in zip(self.outputs, names) if own != given}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for cached in ("node_by_id", "producer_of", "consumers_of", "index", "topological_order"):
            state.pop(cached, None)
        return state

    @cached_property
    def node_by_id(self) -> dict[str, Node]:
        return {node.id: node for node in self.nodes}

    @cached_property
    def producer_of(self) -> dict[str, str]:
        """Value name -> id of the node that produces it."""
        return {out: node.id for node in self.nodes for out in node.outputs if out}

    @cached_property
    def consumers_of(self) -> dict[str, list[str]]:
        """Value name -> ids of the nodes that read it."""
        consumers: dict[str, list[str]] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    consumers.setdefault(name, []).append(node.id)
        return consumers

    def value(self, name: str) -> Value:
        return self.values.get(name) or Value(name)

    def edges(self) -> Iterable[tuple[str, str, str]]:
        """(producer id, consumer id, value name) for every node-to-node edge."""
        producer_of = self.producer_of
        for node in self.nodes:
            for name in node.inputs:
                source = producer_of.get(name)
                if source is not None:
                    yield source, node.id, name

    @cached_property
    def index(self) -> networkx.DiGraph:
        """Node ids and producer -> consumer edges, for reachability, path and order queries."""
        import networkx  # half a second to import: only when a query needs it

        index = networkx.DiGraph()
        index.add_nodes_from(node.id for node in self.nodes)
        index.add_edges_from((source, target) for source, target, _value in self.edges())
        return index

    def upstream_of(self, node_id: str) -> set[str]:
        """Every node whose outputs reach ``node_id`` (its ancestors)."""
        import networkx

        return networkx.ancestors(self.index, node_id)

    def downstream_of(self, node_id: str) -> set[str]:
        """Every node that ``node_id``'s outputs reach (its descendants)."""
        import networkx

        return networkx.descendants(self.index, node_id)

    def path_between(self, first: str, second: str) -> list[str]:
        """The shortest chain of nodes joining the two, in data-flow order whichever comes
        first; [] when neither reaches the other."""
        import networkx

        for source, target in ((first, second), (second, first)):
            try:
                return networkx.shortest_path(self.index, source, target)
            except networkx.NetworkXNoPath:
                continue
        return []

    def nodes_between(self, first: str, second: str) -> set[str]:
        """Every node on some path between the two (both included); empty when not joined."""
        for source, target in ((first, second), (second, first)):
            if source == target or target in self.downstream_of(source):
                return (self.downstream_of(source) & self.upstream_of(target)) | {source, target}
        return set()

    @cached_property
    def topological_order(self) -> list[str]:
        """Node ids, each after every node it reads from; ties keep the file order, so a graph
        already in order (as ONNX and TorchScript files are) keeps its own."""
        import networkx

        position = {node.id: number for number, node in enumerate(self.nodes)}
        try:
            return list(networkx.lexicographical_topological_sort(self.index, key=position.__getitem__))
        except networkx.NetworkXUnfeasible:  # a cycle: no order is topological, keep the file's
            return [node.id for node in self.nodes]

    def unsupported_nodes(self) -> list[Node]:
        return [node for node in self.nodes if node.unsupported]


# Constants and list/tuple plumbing: shown as node inputs, not as nodes of their own (as Netron does).
PLUMBING_KINDS = frozenset({"prim::Constant", "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct",
                            "prim::TupleUnpack", "prim::GetAttr", "onnx::Constant"})


GRAPH_INPUT_KIND = "graph::Input"
GRAPH_OUTPUT_KIND = "graph::Output"


def display_graph(graph: Graph) -> Graph:
    """What a pane draws: the graph's inputs and outputs as nodes of their own, and no
    constant or list-plumbing nodes (flagged nodes always stay)."""
    kept = [node for node in graph.nodes if node.kind not in PLUMBING_KINDS or node.unsupported]
    inputs = [Node(id=f"input:{name}", kind=GRAPH_INPUT_KIND, name=graph.input_labels.get(name, name), outputs=[name])
              for name in graph.inputs]
    outputs = [Node(id=f"output:{name}", kind=GRAPH_OUTPUT_KIND, name=graph.output_labels.get(name, name),
                    inputs=[name]) for name in graph.outputs]
    return Graph(graph.kind, inputs + kept + outputs, graph.values, graph.inputs, graph.outputs, graph.name,
                 graph.input_labels, graph.output_labels)


@dataclass
class GraphMapping:
    """Many-to-many correspondence between a source graph and its ONNX graph."""

    onnx_to_source: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_onnx_graph(cls, onnx_graph: Graph) -> GraphMapping:
        return cls({node.id: list(node.origin) for node in onnx_graph.nodes if node.origin})

    @cached_property
    def source_to_onnx(self) -> dict[str, list[str]]:
        reverse: dict[str, list[str]] = {}
        for onnx_id, source_ids in self.onnx_to_source.items():
            for source_id in source_ids:
                reverse.setdefault(source_id, []).append(onnx_id)
        return reverse

    def counterparts(self, side: GraphSide, node_id: str) -> list[str]:
        """Ids in the other graph that correspond to ``node_id`` on ``side``."""
        if side == "onnx":
            return list(self.onnx_to_source.get(node_id, []))
        return list(self.source_to_onnx.get(node_id, []))
