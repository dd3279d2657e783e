"""Per-node comparison: every intermediate value on both sides, matched through provenance.

Torch side: the exporter's own capture (:class:`fixport.core.exporters.base.NodeCapture`) gives
every source-graph node's tensor outputs, keyed the way ONNX nodes name their origin.
ONNX side: a copy of the model with every node output added as a graph output, run once.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import torch
from onnx import helper

from fixport.core.exporters.base import NodeCapture
from fixport.core.foundation.comparison import difference_metrics, to_numpy
from fixport.core.onnx_io.external_data import tensor_bytes
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.records.compare_result import NodeAnalysis, NodeError, ValueKey
from fixport.core.statistics.output_stats import largest_magnitude
from fixport.core.statistics.tied_order import TiedOrder, find_tied_order
from fixport.core.words.graph import Graph, Node
from fixport.core.words.vocabulary import split_instance_key

SKIPPED_ONNX_OPS = frozenset({"Constant", "Shape", "Size", "ConstantOfShape"})
MAX_INTRODUCED_RERUNS = 50  # re-running node groups alone costs a session each
# A run returns every value it keeps at once: above this many bytes of values (torch's sizes; the
# ONNX values are the same), both sides run once per slice of values, keeping only that slice.
VALUES_PER_RUN_BYTES = 256 * 1024**2
# A smaller model gets smaller slices (a quarter of its weights' size, down to this), so the values
# held stay a fraction of the memory its export takes. On CPU a half-precision model's values are
# computed in float32 beside float32 copies of its weights, so a slice costs ONNX Runtime up to three
# times its torch size: with 256 MB slices, a float16 ViT-B (173 MB of weights) compared at 1.8x a
# plain export's peak memory.
VALUES_PER_RUN_FLOOR_BYTES = 32 * 1024**2
SessionFactory = Callable[[OnnxModel], Any]  # model -> onnxruntime.InferenceSession


def with_all_node_outputs(model: OnnxModel, only: Collection[str] | None = None) -> OnnxModel:
    """A copy of ``model`` whose graph outputs include every node's outputs (over the same weights),
    or of those, the ones named in ``only``.

    Where the weights are on disk (a big model), values computed from them alone are left out: a
    transposed weight is as big as the weight, and the same for every input."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    existing = {output.name for output in copy.graph.output}
    if model.weights_on_disk:
        existing |= constant_values(copy)
    wanted = None if only is None else set(only)
    for node in copy.graph.node:
        for name in node.output:
            if name and name not in existing and (wanted is None or name in wanted):
                copy.graph.output.append(helper.make_empty_tensor_value_info(name))
                existing.add(name)
    return model.derived(copy)


def constant_values(model: onnx.ModelProto) -> set[str]:
    """The initializers and the values computed from them alone (Constant nodes, a Transpose of a
    weight): the same on every input set."""
    constant = {initializer.name for initializer in model.graph.initializer}
    for node in model.graph.node:  # in topological order, as ONNX requires
        inputs = [name for name in node.input if name]
        has_body = any(attribute.HasField("g") or attribute.graphs for attribute in node.attribute)
        if (inputs or node.op_type == "Constant") and not has_body and all(name in constant for name in inputs):
            constant.update(name for name in node.output if name)
    return constant


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
    """Fill ``analysis.nodes`` with one entry per matched value whose shapes agree; a value that agrees
    up to the order of tied elements (TopK's indices, beside its tied values) is within tolerance, noted."""
    by_node: dict[str, list[ValueMatch]] = {}
    for match in matches:
        by_node.setdefault(match.key, []).append(match)
    for match in matches:
        expected = torch_values.get((match.key, match.output_index))
        actual = onnx_values.get(match.onnx_value)
        if expected is None or actual is None:
            continue
        if not (isinstance(expected, np.ndarray) and isinstance(actual, np.ndarray)):
            analysis.skipped_not_tensor += 1  # ONNX Runtime returns a sequence value as a Python list
            continue
        if expected.shape != actual.shape:
            analysis.skipped_shape_mismatch += 1
            continue
        rtol, atol = tolerances.for_values(str(expected.dtype), largest_magnitude(expected))
        metrics = difference_metrics(expected, actual, rtol, atol)
        note = ""
        if metrics["mismatch_count"]:
            tied = _tied_value(match, by_node[match.key], torch_values, onnx_values, tolerances)
            if tied is not None:
                metrics, note = difference_metrics(expected, tied.reordered, rtol, atol), tied.sentence()
        kind, scope, source = _torchscript_details(match.key, source_graph)
        analysis.nodes.append(NodeError(
            onnx_node=match.onnx_node.id, onnx_kind=match.onnx_node.kind, output=match.onnx_value,
            source_node=match.key, source_kind=kind, scope=scope, source=source,
            template=templates_by_instance.get(match.key, ""), shape=tuple(expected.shape),
            dtype=str(expected.dtype), max_abs=metrics["max_abs"], mean_abs=metrics["mean_abs"],
            max_rel=metrics["max_rel"], rtol=rtol, atol=atol, exceeds=metrics["mismatch_count"] > 0, note=note))


def _tied_value(match: ValueMatch, siblings: list[ValueMatch], torch_values: dict[ValueKey, np.ndarray],
                onnx_values: dict[str, Any], tolerances: ToleranceTable) -> TiedOrder | None:
    """``match``'s value as torch's up to the order of tied elements, a key found among the values of
    the same torch node (TopK's values for its indices), or None."""
    values = [(m, torch_values.get((m.key, m.output_index)), onnx_values.get(m.onnx_value)) for m in siblings]
    usable = [(m, t, o) for m, t, o in values if isinstance(t, np.ndarray) and isinstance(o, np.ndarray)]
    usable.sort(key=lambda item: item[0] is not match)  # the value itself first
    if not usable or usable[0][0] is not match:
        return None
    return find_tied_order(0, [(m.onnx_value, t) for m, t, _ in usable], [o for _, _, o in usable],
                           lambda array: tolerances.for_values(str(array.dtype), largest_magnitude(array)))


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


def group_submodel(model: OnnxModel, onnx_graph: Graph, error: NodeError,
                   feeds: dict[str, np.ndarray]) -> tuple[OnnxModel, dict[str, np.ndarray]] | None:
    """The ONNX nodes of ``error``'s TorchScript node that lead to its output, as a small model
    (its initializers still read from the model's weights on disk, when they are there), with the
    nodes that make a constant input ``feeds`` lack (:func:`with_all_node_outputs` leaves those out).
    None where an input has no tensor in ``feeds``: a sequence value (ONNX Runtime's list) has no torch
    counterpart to feed, so the group cannot run on torch's inputs."""
    proto = model.proto
    proto_by_id = {node.id: node_proto for node, node_proto in zip(onnx_graph.nodes, proto.graph.node)}
    node_by_output = {name: node for node in onnx_graph.nodes for name in node.outputs if name}
    constant = constant_values(proto) if model.weights_on_disk else set()
    members: list[Node] = []
    pending = [error.output]
    while pending:
        name = pending.pop()
        producer = node_by_output.get(name)
        if producer is None or producer in members:
            continue
        in_group = bool(producer.origin) and producer.origin[0] == error.source_node
        if not in_group and not (name in constant and name not in feeds):
            continue
        members.append(producer)
        pending += [name for name in producer.inputs if name]
    order = _topological_position(onnx_graph)
    members.sort(key=lambda node: order[node.id])
    produced = {name for node in members for name in node.outputs}
    initializers = {init.name: init for init in proto.graph.initializer}
    needed = [name for node in members for name in node.inputs if name and name not in produced]
    graph_inputs, graph_initializers, sub_feeds = [], [], {}
    for name in dict.fromkeys(needed):
        if name in initializers:
            graph_initializers.append(initializers[name])
        elif isinstance(feeds.get(name), np.ndarray):
            array = feeds[name]
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)))
            sub_feeds[name] = array
        else:
            return None
    graph = helper.make_graph([proto_by_id[node.id] for node in members], "fixport_node_group",
                              graph_inputs, [helper.make_empty_tensor_value_info(error.output)],
                              initializer=graph_initializers)
    submodel = helper.make_model(graph, opset_imports=list(proto.opset_import), ir_version=proto.ir_version)
    submodel.functions.extend(proto.functions)
    return model.derived(submodel), sub_feeds


def measure_introduced_errors(model: OnnxModel, onnx_graph: Graph, analysis: NodeAnalysis,
                              matches: list[ValueMatch],
                              fetch_torch_values: Callable[[Collection[ValueKey]], dict[ValueKey, np.ndarray]],
                              fetch_onnx_values: Callable[[Collection[str]], dict[str, np.ndarray]],
                              session_factory: SessionFactory) -> None:
    """Re-run each out-of-tolerance node group alone, fed torch's values where torch has them and
    ONNX's elsewhere (each side fetched for the values the groups read and make)."""
    exceeding = [error for error in analysis.nodes if error.exceeds]
    # Nodes whose inputs were still fine decide the first divergent node: measure them first.
    candidates = sorted(exceeding, key=lambda error: error.inputs_exceed)[:MAX_INTRODUCED_RERUNS]
    if not candidates:
        return
    names = names_read_by_groups(onnx_graph, {error.source_node for error in candidates})
    onnx_values = fetch_onnx_values(names)
    matches = [match for match in matches if match.onnx_value in names]
    torch_values = fetch_torch_values({(match.key, match.output_index) for match in matches})
    feeds = dict(onnx_values)
    for match in matches:
        value = torch_values.get((match.key, match.output_index))
        onnx_value = onnx_values.get(match.onnx_value)
        if isinstance(value, np.ndarray) and isinstance(onnx_value, np.ndarray) and value.shape == onnx_value.shape:
            feeds[match.onnx_value] = value.astype(onnx_value.dtype, copy=False)
    expected_by_output = {match.onnx_value: torch_values.get((match.key, match.output_index)) for match in matches}
    for error in candidates:
        built = group_submodel(model, onnx_graph, error, feeds)
        if built is None:
            error.note = "could not re-run alone: an input has no captured tensor value (torch keeps none, or it " \
                         "is a sequence)"
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


def names_read_by_groups(onnx_graph: Graph, keys: set[str]) -> set[str]:
    """Every value read by an ONNX node of the groups of TorchScript/FX nodes ``keys``, and every
    value that group makes: what re-running the groups alone can need."""
    names: set[str] = set()
    for node in onnx_graph.nodes:
        if node.origin and node.origin[0] in keys:
            names.update(name for name in (*node.inputs, *node.outputs) if name)
    return names


def _introduces(error: NodeError) -> bool:
    """Whether the node still exceeds tolerance when run alone on torch's inputs (unknown: yes)."""
    return True if error.introduced_exceeds is None else error.introduced_exceeds


def find_first_divergent(analysis: NodeAnalysis, onnx_graph: Graph) -> NodeError | None:
    """First node (topologically) out of tolerance while every compared input was still within."""
    order = _topological_position(onnx_graph)
    diverging = [error for error in analysis.nodes
                 if error.exceeds and not error.inputs_exceed and _introduces(error)]
    return min(diverging, key=lambda error: order[error.onnx_node], default=None)


def all_node_values(model: OnnxModel, inputs: Sequence[torch.Tensor], input_names: Sequence[str],
                    session_factory: SessionFactory, only: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """Every value of ``model`` on ``inputs`` (or of those, the ones named in ``only``), with its
    inputs, by name, from one ONNX Runtime run; the session is gone on return, before the node
    groups open theirs over the same weights."""
    from fixport.core.foundation.session_feeds import feeds_for

    session = session_factory(with_all_node_outputs(model, only))
    feeds = feeds_for(session, list(input_names), [to_numpy(t) for t in inputs])
    names = [output.name for output in session.get_outputs()]
    values = dict(feeds)
    values.update(zip(names, session.run(None, feeds)))
    return values


def values_per_run(model: OnnxModel) -> int:
    """The bytes of values one run of each side may keep for ``model``: a quarter of its weights,
    within VALUES_PER_RUN_FLOOR_BYTES and VALUES_PER_RUN_BYTES."""
    weights = sum(tensor_bytes(tensor, model.base_dir) for tensor in model.proto.graph.initializer)
    return min(VALUES_PER_RUN_BYTES, max(VALUES_PER_RUN_FLOOR_BYTES, weights // 4))


def slices_within(matches: list[ValueMatch], sizes: dict[ValueKey, int], budget: int) -> Iterator[list[ValueMatch]]:
    """``matches`` in order, cut where the torch values they stand for (``sizes``, in bytes) pass
    ``budget`` (the ONNX values are the same size); one slice when they all fit."""
    piece: list[ValueMatch] = []
    size = 0
    for match in matches:
        nbytes = sizes.get((match.key, match.output_index), 0)
        if piece and size + nbytes > budget:
            yield piece
            piece, size = [], 0
        piece.append(match)
        size += nbytes
    if piece:
        yield piece


def analyze_nodes(model: OnnxModel, onnx_graph: Graph, source_graph: Graph | None,
                  capture: NodeCapture, inputs: Sequence[torch.Tensor], input_names: Sequence[str],
                  session_factory: SessionFactory, tolerances: ToleranceTable,
                  templates_by_instance: dict[str, str], run: int = 0, device: str = "cpu") -> NodeAnalysis:
    """Capture both sides for one input set, compare node by node, find the first divergent node.

    ``model`` must have the same node order as ``onnx_graph`` (the graph read from it before
    its provenance was stripped); custom-domain nodes must already be runnable. Both sides run
    once per slice of values (:func:`values_per_run`), keeping that slice: a vision transformer
    at real size has gigabytes of intermediate values, and holding both sides' whole would be more
    than the model itself. ONNX Runtime runs first and its session is gone before torch runs, so
    the session's weights (float32 copies, for a half-precision model on CPU) are never held
    beside torch's values.
    """
    analysis = NodeAnalysis(run=run)
    sizes = capture.value_sizes(inputs, device)
    matches = match_values(onnx_graph, set(sizes))

    def fetch(names: Collection[str] | None) -> dict[str, np.ndarray]:
        return all_node_values(model, inputs, input_names, session_factory, names)

    pieces = list(slices_within(matches, sizes, values_per_run(model)))
    if len(pieces) == 1:  # they all fit: one run of each side, kept for the node groups re-run alone
        onnx_values = fetch(None)
        torch_values = capture.run(inputs, device)
        node_errors(onnx_graph, matches, torch_values, onnx_values, tolerances, source_graph, templates_by_instance,
                    analysis)
        fetch_torch, fetch_onnx = (lambda _keys: torch_values), (lambda _names: onnx_values)
    else:
        for piece in pieces:
            keys = {(match.key, match.output_index) for match in piece}
            onnx_values = fetch([match.onnx_value for match in piece])
            node_errors(onnx_graph, piece, capture.run(inputs, device, keys), onnx_values, tolerances, source_graph,
                        templates_by_instance, analysis)
            del onnx_values  # before the next slice's run
        fetch_torch, fetch_onnx = (lambda keys: capture.run(inputs, device, keys)), fetch
    mark_inherited_errors(onnx_graph, analysis.nodes)
    measure_introduced_errors(model, onnx_graph, analysis, matches, fetch_torch, fetch_onnx, session_factory)
    analysis.first_divergent = find_first_divergent(analysis, onnx_graph)
    if analysis.skipped_not_tensor:
        analysis.messages.append(f"{analysis.skipped_not_tensor} matched value(s) skipped: one side is a sequence "
                                 "(a list of tensors), the other a tensor.")
    if analysis.skipped_shape_mismatch:
        analysis.messages.append(f"{analysis.skipped_shape_mismatch} matched value(s) skipped: "
                                 "torch and ONNX shapes differ (layout changes such as flatten or packing).")
    return analysis
