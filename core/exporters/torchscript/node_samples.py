"""The TorchScript exporter's failing nodes taken out on their own, for trials on the node
(:mod:`fixport.core.fixing.node_trials`).

The exporter runs up to the graph it is about to convert (the copy per-node comparison also
uses) and stops there: nothing is converted or serialised, so this costs a trace, not an export.
That graph, cut down to what feeds the failing nodes, runs once in the TorchScript interpreter on
the example inputs and returns the values flowing into each of them (the model's writes into
slices, which the exporter has wrapped into ``onnx::Placeholder`` nodes, run as the writes they
stand for). Each node is then cloned into a graph of its own: tensors become its inputs, every
other argument (ints, lists of ints, None, dtypes, also sizes the model computed) a constant
holding the value it had.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from fixport.core.exporters.base import NodeSample, NodeSamples, first_error_line
from fixport.core.exporters.torchscript.capture import (
    TorchGraphRecorder,
    inline_index_put_placeholders,
    type_optional_tensor_lists,
)
from fixport.core.exporters.torchscript.script_part import all_nodes
from fixport.core.exporters.torchscript.source_graph import instance_keys
from fixport.core.foundation.comparison import to_numpy
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

if TYPE_CHECKING:
    from fixport.core.loaders.loading import LoadedModel

_function_suffix = itertools.count()  # torch keeps script functions by name in one global unit


class _GraphReached(BaseException):
    """Stops the exporter once the graph it would convert is copied (a BaseException: the
    exporter's own error handling must not turn it into an export failure)."""


class NodeAlone(torch.nn.Module):
    """One node of a traced graph as a module: the exporter traces it like any model."""

    def __init__(self, function: Any) -> None:
        super().__init__()
        self.function = function

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.function(*inputs)


def node_samples(run_export: Callable[[], object], loaded: LoadedModel,
                 problems: Sequence[UnsupportedNode]) -> NodeSamples:
    """A sample per failing node of ``problems`` that can stand alone; the rest say why not.
    ``run_export`` runs the exporter on ``loaded`` with the options the problems came from."""
    samples = NodeSamples()
    try:
        graph, params = _graph_before_conversion(run_export, len(loaded.example_inputs))
    except Exception as exc:  # noqa: BLE001 -- any failure here only means whole-model trials
        samples.undecided = {p.instance: f"the traced graph could not be captured: {first_error_line(exc)}"
                             for p in problems}
        return samples
    by_key = {key: node for node, key in instance_keys(all_nodes(graph)).items()}
    wanted: dict[str, torch._C.Node] = {}
    for problem in problems:
        node = by_key.get(problem.instance)
        if problem.reason == ProblemReason.BAKED_INPUT:
            samples.undecided[problem.instance] = ("the input's values reach the node through the model's Python, "
                                                   "which only the whole model runs")
        elif problem.reason == ProblemReason.SHAPE_SPECIALISED:
            samples.undecided[problem.instance] = ("the size was folded at a line of the model's Python, which only "
                                                   "the whole model runs")
        elif node is None:
            samples.undecided[problem.instance] = "the node is not in the graph the exporter converts"
        elif node.owningBlock() != graph.block():
            samples.undecided[problem.instance] = "the node sits inside a control-flow block"
        else:
            wanted[problem.instance] = node
    if not wanted:
        return samples
    try:
        values = _values_flowing_into(graph, params, wanted, loaded.example_inputs)
    except Exception as exc:  # noqa: BLE001 -- the traced graph does not run on its own
        samples.undecided.update({key: f"the values flowing into the node could not be captured: "
                                       f"{first_error_line(exc)}" for key in wanted})
        return samples
    for key, node in wanted.items():
        try:
            samples.samples[key] = _node_alone(key, node, values[key])
        except Exception as exc:  # noqa: BLE001 -- an argument no constant can hold, an odd output
            samples.undecided[key] = f"the node cannot run on its own: {first_error_line(exc)}"
    return samples


def _graph_before_conversion(run_export: Callable[[], object], input_count: int
                             ) -> tuple[torch._C.Graph, list[torch.Tensor]]:
    """The graph the exporter would convert (its instance keys are the problems') and the
    parameters that are its trailing inputs."""
    recorder = TorchGraphRecorder()
    with recorder.hooks(input_count), _stop_after_copy():
        try:
            run_export()
        except _GraphReached:
            pass
    if recorder.graph is None:
        raise RuntimeError("the exporter did not reach its TorchScript passes")
    return recorder.graph, recorder.params


@contextmanager
def _stop_after_copy() -> Iterator[None]:
    copying = torch._C._jit_pass_erase_number_types  # the recorder's hook, which copies the graph

    def copy_and_stop(graph: torch._C.Graph) -> None:
        copying(graph)
        raise _GraphReached

    torch._C._jit_pass_erase_number_types = copy_and_stop
    try:
        yield
    finally:
        torch._C._jit_pass_erase_number_types = copying


def _values_flowing_into(graph: torch._C.Graph, params: list[torch.Tensor], nodes: dict[str, torch._C.Node],
                         inputs: Sequence[torch.Tensor]) -> dict[str, list[Any]]:
    """Run the part of ``graph`` that feeds ``nodes`` once: each node's input values, by key."""
    probe = graph.copy()
    position = {node: index for index, node in enumerate(all_nodes(graph))}
    probe_nodes = list(all_nodes(probe))
    for node in probe_nodes:
        if node.hasAttribute(FUSED_OUTPUTS_ATTRIBUTE):
            _unfuse_list_outputs(probe, node)
    inline_index_put_placeholders(probe)
    none = probe.insertConstant(None)
    none.node().moveBefore(next(iter(probe.nodes())))
    returned: list[torch._C.Value] = []
    slots: dict[str, list[int]] = {}
    for key, node in nodes.items():
        target = probe_nodes[position[node]]
        slots[key] = []
        for value in target.inputs():
            if isinstance(value.type(), torch._C.TensorType):
                # A copy taken just before the node: a later in-place op must not change it.
                copy = probe.create("aten::clone", [value, none])
                copy.output().setType(value.type())
                copy.insertBefore(target)
                value = copy.output()
            slots[key].append(len(returned))
            returned.append(value)
    while len(list(probe.outputs())):
        probe.eraseOutput(0)
    pack = probe.create("prim::TupleConstruct", returned)
    pack.output().setType(torch._C.TupleType([v.type() for v in returned]))
    probe.appendNode(pack)
    probe.registerOutput(pack.output())
    torch._C._jit_pass_dce(probe)
    type_optional_tensor_lists(probe)
    function = torch._C._create_function_from_graph(f"fixport_node_inputs_{next(_function_suffix)}", probe)
    with torch.no_grad():
        values = function(*inputs, *params)
    values = values if isinstance(values, tuple) else (values,)
    return {key: [values[i] for i in indexes] for key, indexes in slots.items()}


FUSED_OUTPUTS_ATTRIBUTE = "_outputs"  # set by the exporter's preprocessing on split/unbind fused with their ListUnpack


def _unfuse_list_outputs(graph: torch._C.Graph, node: torch._C.Node) -> None:
    """The exporter's preprocessing makes ``x.unbind(0)`` (split, chunk, ...) and the unpacking of its
    list one node with several outputs, which the TorchScript interpreter cannot run: give it back
    its list output and a ``prim::ListUnpack``, in place (the node stays, its outputs are rerouted)."""
    listed = graph.create(node.kind(), list(node.inputs()))
    listed.output().setType(torch._C.ListType(torch._C.TensorType.get()))
    listed.insertBefore(node)
    unpack = graph.create("prim::ListUnpack", [listed.output()], node.outputsSize())
    unpack.insertBefore(node)
    for old, new in zip(node.outputs(), unpack.outputs()):
        new.setType(old.type())
        old.replaceAllUsesWith(new)


def _node_alone(key: str, node: torch._C.Node, values: list[Any]) -> NodeSample:
    """``node`` cloned into a graph of its own, run once in torch for the expected outputs."""
    alone = torch._C.Graph()
    inputs: list[torch.Tensor] = []
    mapped: dict[torch._C.Value, torch._C.Value] = {}

    def as_input(value_type: Any, actual: torch.Tensor) -> torch._C.Value:
        made = alone.addInput()
        made.setType(value_type)
        inputs.append(actual)
        return made

    for value, actual in zip(node.inputs(), values):
        producer = value.node().kind()
        if isinstance(actual, torch.Tensor) and producer != "prim::Constant":
            mapped[value] = as_input(value.type(), actual)
        elif producer == "prim::ListConstruct" and actual and all(isinstance(a, torch.Tensor) for a in actual):
            items = [as_input(item.type(), a) for item, a in zip(value.node().inputs(), actual)]
            listed = alone.create("prim::ListConstruct", items)
            listed.output().setType(value.type())
            alone.appendNode(listed)
            mapped[value] = listed.output()
        else:
            mapped[value] = alone.insertConstant(actual)
    clone = alone.createClone(node, lambda value: mapped[value])
    alone.appendNode(clone)
    outputs = list(clone.outputs())
    for output in outputs:
        if not isinstance(output.type(), torch._C.TensorType):
            raise RuntimeError(f"it returns a {output.type()}, not tensors")
    if len(outputs) == 1:
        alone.registerOutput(outputs[0])
    else:  # a function returns one value: several outputs (max.dim's values and indices) as a tuple
        pack = alone.create("prim::TupleConstruct", outputs)
        pack.output().setType(torch._C.TupleType([o.type() for o in outputs]))
        alone.appendNode(pack)
        alone.registerOutput(pack.output())
    function = torch._C._create_function_from_graph(f"fixport_node_alone_{next(_function_suffix)}", alone)
    with torch.no_grad():
        outputs = function(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    if any(t.is_complex() for t in (*inputs, *outputs)):
        # ONNX has no complex tensors: fixes carry them as real pairs, agreed on with the
        # neighbouring nodes, so only the whole model can judge such a node.
        raise RuntimeError("it takes or returns complex tensors, which fixes carry as real pairs "
                           "agreed with its neighbours")
    expected = [(f"output_{index}", to_numpy(output)) for index, output in enumerate(outputs)]
    return NodeSample(key, NodeAlone(function), tuple(inputs), expected, arguments=(tuple(values), {}))
