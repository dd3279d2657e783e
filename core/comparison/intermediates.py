"""Per-node comparison: every intermediate value on both sides, matched through provenance.

Torch side: while the exporter runs, the TorchScript graph it is about to convert is copied
just before ``_jit_pass_erase_number_types`` (after it the graph no longer runs in the
interpreter), and once more as traced, before the in-place removal and preprocessing passes
(their onnx::Placeholder nodes and split fused with ListUnpack do not run either): the first
copy that runs serves. Every tensor a node of that copy produces becomes a graph
output and the copy becomes a runnable function: one run gives all values, keyed by the
producing node's instance key, the same keys ONNX nodes carry in ``origin``.
ONNX side: a copy of the model with every node output added as a graph output, run once.
"""
from __future__ import annotations

import itertools
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import onnx
import torch
from onnx import helper
from torch.onnx._internal.torchscript_exporter import utils as exporter_utils

from fixport.core.loaders.torchscript_graph import all_nodes, instance_keys
from fixport.core.model.compare_result import NodeAnalysis, NodeError  # noqa: F401
from fixport.core.model.graph import Graph, Node
from fixport.core.model.output_stats import difference_metrics, to_numpy
from fixport.core.model.tolerances import ToleranceTable
from fixport.core.model.vocabulary import split_instance_key

SKIPPED_ONNX_OPS = frozenset({"Constant", "Shape", "Size", "ConstantOfShape"})
# torch keeps functions in one global compilation unit by name: a reused name frees the old one.
_function_suffix = itertools.count()
MAX_INTRODUCED_RERUNS = 50  # re-running node groups alone costs a session each
ValueKey = tuple[str, int]  # (instance key, output position)
SessionFactory = Callable[[onnx.ModelProto], Any]  # model -> onnxruntime.InferenceSession


class TorchCaptureError(RuntimeError):
    """The traced graph cannot be turned into a runnable function."""


@dataclass
class TorchCapture:
    """The exporter's TorchScript graph as a function returning every node's tensor outputs."""

    graph: torch._C.Graph  # pristine copy, for single-node reference functions
    node_by_key: dict[str, torch._C.Node]
    params: list[torch.Tensor]
    outputs: list[ValueKey]
    function: Any  # torch._C.ScriptFunction
    # The graph as traced (before the exporter's in-place removal and preprocessing): made
    # runnable only when the graph above does not run in the interpreter.
    traced_graph: torch._C.Graph | None = None

    def run(self, inputs: Sequence[torch.Tensor], device: str = "cpu") -> dict[ValueKey, np.ndarray]:
        """All captured values for one input set."""
        arguments = [t.to(device) for t in (*inputs, *self.params)]
        with torch.no_grad():
            try:
                values = self.function(*arguments)
            except RuntimeError:
                # onnx::Placeholder nodes, or split fused with its ListUnpack: ONNX-only forms
                if self.traced_graph is None:
                    raise
                self.function, self.outputs = _runnable_traced(self.traced_graph, self.graph)
                self.traced_graph = None
                values = self.function(*arguments)
        values = values if isinstance(values, tuple) else (values,)
        return {key: to_numpy(value) for key, value in zip(self.outputs, values)}


class TorchGraphRecorder:
    """Hooks that copy the graph the exporter converts; :meth:`build` makes it runnable."""

    def __init__(self) -> None:
        self.graph: torch._C.Graph | None = None
        self.traced_graph: torch._C.Graph | None = None  # before the exporter's ONNX-only rewrites
        self.params: list[torch.Tensor] = []
        self.user_input_count = 0

    @contextmanager
    def hooks(self, user_input_count: int) -> Iterator[TorchGraphRecorder]:
        self.user_input_count = user_input_count
        original_create, original_erase = exporter_utils._create_jit_graph, torch._C._jit_pass_erase_number_types
        original_remove_inplace = torch._C._jit_pass_onnx_remove_inplace_ops_for_onnx

        def create_jit_graph(model: Any, args: Any) -> Any:
            created = original_create(model, args)
            self.params = [p.detach() for p in created[1]]
            return created

        def remove_inplace_ops(graph: torch._C.Graph, module: Any) -> Any:
            if self.traced_graph is None:
                self.traced_graph = graph.copy()
            return original_remove_inplace(graph, module)

        def erase_number_types(graph: torch._C.Graph) -> Any:
            if self.graph is None:
                self.graph = graph.copy()
            return original_erase(graph)

        exporter_utils._create_jit_graph = create_jit_graph
        torch._C._jit_pass_onnx_remove_inplace_ops_for_onnx = remove_inplace_ops
        torch._C._jit_pass_erase_number_types = erase_number_types
        try:
            yield self
        finally:
            exporter_utils._create_jit_graph = original_create
            torch._C._jit_pass_onnx_remove_inplace_ops_for_onnx = original_remove_inplace
            torch._C._jit_pass_erase_number_types = original_erase

    def build(self) -> TorchCapture:
        if self.graph is None:
            raise TorchCaptureError("The exporter did not reach its TorchScript passes; nothing was recorded.")
        input_count = len(list(self.graph.inputs()))
        if input_count != self.user_input_count + len(self.params):
            raise TorchCaptureError(f"The traced graph has {input_count} inputs, expected "
                                    f"{self.user_input_count} inputs plus {len(self.params)} parameters.")
        traced = self.traced_graph
        if traced is not None and len(list(traced.inputs())) != input_count:
            traced = None
        try:
            function, outputs = _runnable(self.graph)
        except TorchCaptureError:
            if traced is None:
                raise
            (function, outputs), traced = _runnable_traced(traced, self.graph), None
        pristine_keys = instance_keys(all_nodes(self.graph))
        return TorchCapture(self.graph, {key: node for node, key in pristine_keys.items()},
                            self.params, outputs, function, traced)


def _runnable_traced(traced: torch._C.Graph, converted: torch._C.Graph) -> tuple[Any, list[ValueKey]]:
    """The traced graph made runnable, keeping only values whose keys name the same node in the
    graph the exporter converted (the keys its ONNX nodes carry)."""
    return _runnable(traced, _bases_counted_alike(traced, converted))


def _bases_counted_alike(traced: torch._C.Graph, converted: torch._C.Graph) -> set[str]:
    """Key bases (scope|source|kind) with as many nodes in the traced graph as in the graph the
    exporter converts: only there does an occurrence number name the same node in both (the
    in-place removal adds slices and index_puts where the model assigns into a slice)."""
    def counts(graph: torch._C.Graph) -> Counter[str]:
        return Counter(key.rsplit("|", 1)[0] for key in instance_keys(all_nodes(graph)).values())

    converted_counts = counts(converted)
    return {base for base, count in counts(traced).items() if converted_counts.get(base) == count}


def _runnable(graph: torch._C.Graph, trusted_bases: set[str] | None = None) -> tuple[Any, list[ValueKey]]:
    """A function of a copy of ``graph`` returning every node's tensor outputs, and their keys
    (only for ``trusted_bases``' nodes where given)."""
    runnable = graph.copy()
    _type_optional_tensor_lists(runnable)
    keys = instance_keys(all_nodes(runnable))
    captured: list[torch._C.Value] = []
    outputs: list[ValueKey] = []
    none = runnable.insertConstant(None)
    none.node().moveBefore(runnable.nodes().__next__())
    for node in list(runnable.nodes()):
        if node.kind() == "prim::Constant":
            continue
        anchor = node
        owner = _list_producer(node) or node
        if trusted_bases is not None and keys[owner].rsplit("|", 1)[0] not in trusted_bases:
            continue
        for index, value in enumerate(node.outputs()):
            if isinstance(value.type(), torch._C.TensorType):
                # A copy taken at once: later in-place ops (relu_, add_) must not change it.
                copy = runnable.create("aten::clone", [value, none])
                copy.output().setType(value.type())
                copy.insertAfter(anchor)
                anchor = copy
                captured.append(copy.output())
                outputs.append((keys[owner], index))
    pack = runnable.create("prim::TupleConstruct", captured)
    pack.output().setType(torch._C.TupleType([v.type() for v in captured]))
    runnable.appendNode(pack)
    while len(list(runnable.outputs())):
        runnable.eraseOutput(0)
    runnable.registerOutput(pack.output())
    try:
        function = torch._C._create_function_from_graph(f"fixport_capture_{next(_function_suffix)}", runnable)
    except RuntimeError as exc:
        raise TorchCaptureError(f"The traced graph cannot run on its own: {str(exc).splitlines()[0]}") from exc
    return function, outputs


def _list_producer(node: torch._C.Node) -> torch._C.Node | None:
    """For ``a, b = x.split(...)``: the split, whose ListUnpack the exporter fuses into it (its
    ONNX nodes carry the split's key), so the unpacked tensors are the split's outputs."""
    if node.kind() != "prim::ListUnpack":
        return None
    producer = node.input().node()
    if len(list(producer.outputs())) == 1 and len(producer.output().uses()) == 1 and producer.kind() != "prim::Param":
        return producer
    return None


def _type_optional_tensor_lists(graph: torch._C.Graph) -> None:
    """The tracer types ``x[:, idx]``'s index list ``[None, idx]`` as Tensor[]; the interpreter
    then fails on the None ("Expected Tensor but got None"): such lists become Tensor?[]."""
    optional_tensors = torch._C.ListType(torch._C.OptionalType(torch._C.TensorType.get()))
    for node in all_nodes(graph):
        if node.kind() == "prim::ListConstruct" and any(
                isinstance(value.type(), torch._C.NoneType) for value in node.inputs()):
            node.output().setType(optional_tensors)


def with_all_node_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose graph outputs include every node's outputs."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    existing = {output.name for output in copy.graph.output}
    for node in copy.graph.node:
        for name in node.output:
            if name and name not in existing:
                copy.graph.output.append(helper.make_empty_tensor_value_info(name))
                existing.add(name)
    return copy


@dataclass
class ValueMatch:
    """One ONNX value that stands for output ``output_index`` of TorchScript node ``key``."""

    onnx_node: Node
    onnx_value: str
    key: str
    output_index: int


def match_values(onnx_graph: Graph, captured: set[ValueKey]) -> list[ValueMatch]:
    """Pair each TorchScript node's outputs with the values leaving its ONNX node group."""
    groups: dict[str, list[Node]] = {}
    for node in onnx_graph.nodes:
        if node.origin and node.op_type not in SKIPPED_ONNX_OPS:
            groups.setdefault(node.origin[0], []).append(node)
    graph_outputs = set(onnx_graph.outputs)
    matches: list[ValueMatch] = []
    for key, nodes in groups.items():
        member_ids = {node.id for node in nodes}
        leaving = [(node, name) for node in nodes for name in node.outputs if name and (
            name in graph_outputs or any(c not in member_ids for c in onnx_graph.consumers_of.get(name, [])))]
        torch_outputs = sorted(index for k, index in captured if k == key)
        if len(leaving) == len(torch_outputs):
            pairs = list(zip(leaving, torch_outputs))
        elif len(torch_outputs) == 1 and leaving:
            pairs = [(leaving[-1], torch_outputs[0])]
        else:
            continue
        matches += [ValueMatch(node, name, key, index) for (node, name), index in pairs]
    order = _topological_position(onnx_graph)
    return sorted(matches, key=lambda m: order[m.onnx_node.id])


def _topological_position(graph: Graph) -> dict[str, int]:
    return {node_id: position for position, node_id in enumerate(graph.topological_order)}


def _torchscript_details(key: str, source_graph: Graph | None) -> tuple[str, str, str]:
    """(kind, scope, source) of a TorchScript node, from the export's graph or the key itself."""
    node = source_graph.node_by_id.get(key) if source_graph is not None else None
    if node is not None:
        return node.name or node.kind, node.scope, node.source
    scope, source, kind = split_instance_key(key)
    return kind, scope, source


def node_errors(onnx_graph: Graph, matches: list[ValueMatch], torch_values: dict[ValueKey, np.ndarray],
                onnx_values: dict[str, np.ndarray], tolerances: ToleranceTable, source_graph: Graph | None,
                templates_by_instance: dict[str, str], analysis: NodeAnalysis) -> None:
    """Fill ``analysis.nodes`` with one entry per matched value whose shapes agree."""
    for match in matches:
        expected = torch_values.get((match.key, match.output_index))
        actual = onnx_values.get(match.onnx_value)
        if expected is None or actual is None:
            continue
        if expected.shape != actual.shape:
            analysis.skipped_shape_mismatch += 1
            continue
        rtol, atol = tolerances.for_dtype(str(expected.dtype))
        metrics = difference_metrics(expected, actual, rtol, atol)
        kind, scope, source = _torchscript_details(match.key, source_graph)
        analysis.nodes.append(NodeError(
            onnx_node=match.onnx_node.id, onnx_kind=match.onnx_node.kind, output=match.onnx_value,
            torchscript_node=match.key, torchscript_kind=kind, scope=scope, source=source,
            template=templates_by_instance.get(match.key, ""), shape=tuple(expected.shape),
            dtype=str(expected.dtype), max_abs=metrics["max_abs"], mean_abs=metrics["mean_abs"],
            max_rel=metrics["max_rel"], rtol=rtol, atol=atol, exceeds=metrics["mismatch_count"] > 0))


def mark_inherited_errors(onnx_graph: Graph, errors: list[NodeError]) -> None:
    """Set ``inputs_exceed``: whether the nearest compared values upstream were out of tolerance."""
    by_output = {error.output: error for error in errors}
    tainted: dict[str, bool] = {}
    for node in map(onnx_graph.node_by_id.__getitem__, onnx_graph.topological_order):
        inputs_bad = any(tainted.get(name, False) for name in node.inputs if name)
        for name in node.outputs:
            error = by_output.get(name)
            if error is not None:
                error.inputs_exceed = inputs_bad
                tainted[name] = error.exceeds
            else:
                tainted[name] = inputs_bad


def group_submodel(model: onnx.ModelProto, onnx_graph: Graph, error: NodeError,
                   feeds: dict[str, np.ndarray]) -> tuple[onnx.ModelProto, dict[str, np.ndarray]] | None:
    """The ONNX nodes of ``error``'s TorchScript node that lead to its output, as a small model."""
    proto_by_id = {node.id: proto for node, proto in zip(onnx_graph.nodes, model.graph.node)}
    node_by_output = {name: node for node in onnx_graph.nodes for name in node.outputs if name}
    members: list[Node] = []
    pending = [error.output]
    while pending:
        producer = node_by_output.get(pending.pop())
        if producer is None or producer in members or not producer.origin or producer.origin[0] != error.torchscript_node:
            continue
        members.append(producer)
        pending += [name for name in producer.inputs if name]
    order = _topological_position(onnx_graph)
    members.sort(key=lambda node: order[node.id])
    produced = {name for node in members for name in node.outputs}
    initializers = {init.name: init for init in model.graph.initializer}
    needed = [name for node in members for name in node.inputs if name and name not in produced]
    graph_inputs, graph_initializers, sub_feeds = [], [], {}
    for name in dict.fromkeys(needed):
        if name in initializers:
            graph_initializers.append(initializers[name])
        elif name in feeds:
            array = feeds[name]
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)))
            sub_feeds[name] = array
        else:
            return None
    graph = helper.make_graph([proto_by_id[node.id] for node in members], "fixport_node_group",
                              graph_inputs, [helper.make_empty_tensor_value_info(error.output)],
                              initializer=graph_initializers)
    submodel = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    submodel.functions.extend(model.functions)
    return submodel, sub_feeds


def measure_introduced_errors(model: onnx.ModelProto, onnx_graph: Graph, analysis: NodeAnalysis,
                              matches: list[ValueMatch], torch_values: dict[ValueKey, np.ndarray],
                              onnx_values: dict[str, np.ndarray], session_factory: SessionFactory) -> None:
    """Re-run each out-of-tolerance node group alone, fed torch's values where torch has them."""
    feeds = dict(onnx_values)
    for match in matches:
        value = torch_values.get((match.key, match.output_index))
        onnx_value = onnx_values.get(match.onnx_value)
        if value is not None and onnx_value is not None and value.shape == onnx_value.shape:
            feeds[match.onnx_value] = value.astype(onnx_value.dtype, copy=False)
    expected_by_output = {match.onnx_value: torch_values.get((match.key, match.output_index)) for match in matches}
    exceeding = [error for error in analysis.nodes if error.exceeds]
    # Nodes whose inputs were still fine decide the first divergent node: measure them first.
    candidates = sorted(exceeding, key=lambda error: error.inputs_exceed)[:MAX_INTRODUCED_RERUNS]
    for error in candidates:
        built = group_submodel(model, onnx_graph, error, feeds)
        if built is None:
            error.note = "could not re-run alone: an input has no captured value"
            continue
        submodel, sub_feeds = built
        try:
            (output,) = session_factory(submodel).run(None, sub_feeds)
        except Exception as exc:  # ORT's own exception types
            error.note = f"could not re-run alone: {str(exc).splitlines()[0][:200]}"
            continue
        expected = expected_by_output[error.output]
        if expected is not None and output.shape == expected.shape:
            alone = difference_metrics(expected, output, error.rtol, error.atol)
            error.introduced_max_abs = alone["max_abs"]
            error.introduced_exceeds = alone["mismatch_count"] > 0
            error.note = "" if _introduces(error) else "error inherited: alone on torch's inputs it is within tolerance"
    if len(exceeding) > MAX_INTRODUCED_RERUNS:
        analysis.messages.append(f"Introduced error measured for the first {MAX_INTRODUCED_RERUNS} "
                                 "out-of-tolerance nodes only.")


def _introduces(error: NodeError) -> bool:
    """Whether the node still exceeds tolerance when run alone on torch's inputs (unknown: yes)."""
    return True if error.introduced_exceeds is None else error.introduced_exceeds


def find_first_divergent(analysis: NodeAnalysis, onnx_graph: Graph) -> NodeError | None:
    """First node (topologically) out of tolerance while every compared input was still within."""
    order = _topological_position(onnx_graph)
    diverging = [error for error in analysis.nodes
                 if error.exceeds and not error.inputs_exceed and _introduces(error)]
    return min(diverging, key=lambda error: order[error.onnx_node], default=None)


def analyze_nodes(model: onnx.ModelProto, onnx_graph: Graph, source_graph: Graph | None,
                  capture: TorchCapture, inputs: Sequence[torch.Tensor], input_names: Sequence[str],
                  session_factory: SessionFactory, tolerances: ToleranceTable,
                  templates_by_instance: dict[str, str], run: int = 0, device: str = "cpu") -> NodeAnalysis:
    """Capture both sides for one input set, compare node by node, find the first divergent node.

    ``model`` must have the same node order as ``onnx_graph`` (the graph read from it before
    its provenance was stripped); custom-domain nodes must already be runnable.
    """
    from fixport.core.onnx_io.ort_session import feeds_for

    analysis = NodeAnalysis(run=run)
    torch_values = capture.run(inputs, device)
    session = session_factory(with_all_node_outputs(model))
    feeds = feeds_for(session, list(input_names), [to_numpy(t) for t in inputs])
    names = [output.name for output in session.get_outputs()]
    onnx_values = dict(feeds)
    onnx_values.update(zip(names, session.run(None, feeds)))
    matches = match_values(onnx_graph, set(torch_values))
    node_errors(onnx_graph, matches, torch_values, onnx_values, tolerances, source_graph,
                templates_by_instance, analysis)
    mark_inherited_errors(onnx_graph, analysis.nodes)
    measure_introduced_errors(model, onnx_graph, analysis, matches, torch_values, onnx_values, session_factory)
    analysis.first_divergent = find_first_divergent(analysis, onnx_graph)
    if analysis.skipped_shape_mismatch:
        analysis.messages.append(f"{analysis.skipped_shape_mismatch} matched value(s) skipped: "
                                 "torch and ONNX shapes differ (layout changes such as flatten or packing).")
    return analysis
