"""The TorchScript exporter's per-node capture: the graph it converts, as a function returning
every node's tensor outputs, keyed by the instance keys its ONNX nodes carry in ``origin``.

While the exporter runs, the TorchScript graph it is about to convert is copied just before
``_jit_pass_erase_number_types`` (after it the graph no longer runs in the interpreter), and once
more as traced, before the in-place removal and preprocessing passes (their onnx::Placeholder
nodes and split fused with ListUnpack do not run either): the first copy that runs serves.
"""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.onnx._internal.torchscript_exporter import utils as exporter_utils

from fixport.core.exporters.torchscript.script_part import all_nodes
from fixport.core.exporters.torchscript.source_graph import instance_keys
from fixport.core.foundation.comparison import to_numpy
from fixport.core.records.compare_result import ValueKey

# torch keeps functions in one global compilation unit by name: a reused name frees the old one.
_function_suffix = itertools.count()


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

    def run(self, inputs: Sequence[torch.Tensor], device: str = "cpu",
            keep: Collection[ValueKey] | None = None) -> dict[ValueKey, np.ndarray]:
        """The captured values of one input set (those in ``keep``): the graph returns them all at
        once, the others are dropped as soon as it has."""
        values = self._values(inputs, device)
        return {key: to_numpy(value) for key, value in zip(self.outputs, values) if keep is None or key in keep}

    def value_sizes(self, inputs: Sequence[torch.Tensor], device: str = "cpu") -> dict[ValueKey, int]:
        values = self._values(inputs, device)
        return {key: value.nbytes if isinstance(value, torch.Tensor) else np.asarray(value).nbytes
                for key, value in zip(self.outputs, values)}

    def _values(self, inputs: Sequence[torch.Tensor], device: str) -> tuple[Any, ...]:
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
        return values if isinstance(values, tuple) else (values,)


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
            # a quantized model's packed parameters come as tuples
            self.params = [p.detach() if isinstance(p, torch.Tensor) else p for p in created[1]]
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
    type_optional_tensor_lists(runnable)
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


def type_optional_tensor_lists(graph: torch._C.Graph) -> None:
    """The tracer types ``x[:, idx]``'s index list ``[None, idx]`` as Tensor[]; the interpreter
    then fails on the None ("Expected Tensor but got None"): such lists become Tensor?[]."""
    optional_tensors = torch._C.ListType(torch._C.OptionalType(torch._C.TensorType.get()))
    for node in all_nodes(graph):
        if node.kind() == "prim::ListConstruct" and any(
                isinstance(value.type(), torch._C.NoneType) for value in node.inputs()):
            node.output().setType(optional_tensors)


PLACEHOLDER_KIND = "onnx::Placeholder"


def inline_index_put_placeholders(graph: torch._C.Graph) -> None:
    """The exporter's in-place removal wraps ``x[1:3, 0] = y`` (a slice/select chain of ``x`` and an
    index_put on it) into an ``onnx::Placeholder`` whose value is ``x`` updated, which the
    TorchScript interpreter cannot run (``copy_`` takes the same form, with no indices). Each
    becomes what it stands for, in place: a copy of ``x``, the chain on the copy and the write
    into it (in place, so it goes through the views)."""
    placeholders = [node for node in all_nodes(graph)
                    if node.kind() == PLACEHOLDER_KIND and node.s("name") in ("index_put", "index_put_")]
    if not placeholders:
        return
    none = graph.insertConstant(None)
    none.node().moveBefore(next(iter(graph.nodes())))
    for placeholder in placeholders:
        _write_instead_of(graph, placeholder, none)


def _write_instead_of(graph: torch._C.Graph, placeholder: torch._C.Node, none: torch._C.Value) -> None:
    """One index_put placeholder replaced by the write it stands for, into a copy of its input."""
    (block,) = placeholder.blocks()
    base = placeholder.input()
    copy = graph.create("aten::clone", [base, none])
    copy.output().setType(base.type())
    copy.insertBefore(placeholder)
    *chain, index_put = list(block.nodes())
    # The block reads x under the name it had when traced; the placeholder's input is x as updated by then.
    traced_base = (chain[0] if chain else index_put).inputsAt(0)
    mapped = {base: copy.output(), traced_base: copy.output()}
    for view in chain:
        clone = graph.createClone(view, lambda value: mapped.get(value, value))
        clone.insertBefore(placeholder)
        for old, new in zip(view.outputs(), clone.outputs()):
            mapped[old] = new
    target, indices, values, flag = (mapped.get(v, v) for v in index_put.inputs())
    if indices.node().kind() == "prim::ListConstruct" and not list(indices.node().inputs()):
        # the exporter's form of ``copy_`` (an index_put with no indices), which torch refuses
        written = graph.create("aten::copy_", [target, values, flag])
    else:
        written = graph.create("aten::index_put_", [target, indices, values, flag])
    written.output().setType(index_put.output().type())
    written.insertBefore(placeholder)
    placeholder.output().replaceAllUsesWith(copy.output())
    placeholder.destroy()
