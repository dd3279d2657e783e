"""The dynamo exporter's failing nodes taken out on their own, for trials on the node
(:mod:`fixport.core.fixing.node_trials`).

The program the exporter translates (captured, then decomposed against the ONNX registry with
the fixes so far) runs once in an FX interpreter on the example inputs, which keeps the
arguments each failing node is called with. Each node then becomes a module that calls its op
overload on them: tensors are the module's inputs, everything else (ints, sizes, lists, dtypes)
the values they had. torch.export captures that module as the same one-op graph.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from fixport.core.exporters.base import NodeSample, NodeSamples, first_error_line
from fixport.core.exporters.dynamo.origins import captured_origin
from fixport.core.exporters.torch_export.op_alone import OpAlone
from fixport.core.foundation.comparison import to_numpy
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

if TYPE_CHECKING:
    from fixport.core.loaders.loading import LoadedModel

_NOT_CAPTURED = "torch.export could not capture the model as one graph"
_PINNED_SIZE = "a size the capture pinned is kept by capturing the whole model again with the code change"
_PASS_FAILED = "torch.onnx's own pass over the captured graph failed, which only the whole model runs"


def node_samples(program: torch.export.ExportedProgram | None, loaded: LoadedModel,
                 problems: Sequence[UnsupportedNode],
                 captured: torch.export.ExportedProgram | None = None) -> NodeSamples:
    """A sample per failing node of ``program`` named by ``problems``; the rest say why not. A node
    torch.onnx made while decomposing a captured op (``decomposed_from``) is sampled as that op
    in ``captured``, the program ``program`` was decomposed from: its fix replaces that op."""
    samples = NodeSamples()
    if program is None:
        samples.undecided = {p.instance: _PASS_FAILED if p.reason == ProblemReason.EXPORT_FAILED else _NOT_CAPTURED
                             for p in problems}
        return samples
    nodes = {node.name: node for node in program.graph.nodes if node.op == "call_function"}
    captured_nodes = {node.name: node for node in captured.graph.nodes} if captured is not None else {}
    wanted: dict[str, torch.fx.Node] = {}  # problem instance -> the node of program to sample
    wanted_captured: dict[str, torch.fx.Node] = {}  # problem instance -> the node of captured to sample
    for problem in problems:
        origin = (captured_origin(program, problem.instance, captured)
                  if problem.decomposed_from and captured is not None else None)
        if origin is not None:
            wanted_captured[problem.instance] = captured_nodes[origin[1]]
        elif problem.reason == ProblemReason.CAPTURE_FAILED:
            samples.undecided[problem.instance] = "a capture failure is fixed by capturing the whole model again"
        elif problem.reason == ProblemReason.SHAPE_SPECIALISED and problem.code_change_fix:
            samples.undecided[problem.instance] = _PINNED_SIZE
        elif problem.instance in nodes:
            wanted[problem.instance] = nodes[problem.instance]
        else:
            samples.undecided[problem.instance] = "the node is not in the program the exporter translates"
    for source, chosen in ((program, wanted), (captured, wanted_captured)):
        if not chosen:
            continue
        assert source is not None
        try:
            seen = _arguments_seen(source, {node.name for node in chosen.values()}, loaded.example_inputs)
        except Exception as exc:  # noqa: BLE001 -- only means whole-model trials
            samples.undecided.update({name: f"the program could not run node by node: {first_error_line(exc)}"
                                      for name in chosen})
            continue
        for name, node in chosen.items():
            try:
                samples.samples[name] = _op_alone(name, node.target, seen[node.name], _dynamic_dims(node),
                                                  _used_outputs(node))
            except Exception as exc:  # noqa: BLE001 -- an odd output, complex tensors
                samples.undecided[name] = f"the node cannot run on its own: {first_error_line(exc)}"
    return samples


def _arguments_seen(program: torch.export.ExportedProgram, names: set[str],
                    inputs: Sequence[torch.Tensor]) -> dict[str, tuple[tuple, dict]]:
    seen: dict[str, tuple[tuple, dict]] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            if node.name in names:
                args, kwargs = self.fetch_args_kwargs_from_env(node)
                # copies: a later in-place op must not change what the node saw
                seen[node.name] = pytree.tree_map_only(torch.Tensor, lambda t: t.detach().clone(), (args, kwargs))
            return super().run_node(node)

    with torch.no_grad():
        Recorder(program.module()).run(*inputs)
    missing = names - set(seen)
    if missing:
        raise RuntimeError(f"{', '.join(sorted(missing))} did not run (a branch not taken)")
    return seen


def _dynamic_dims(node: torch.fx.Node) -> dict[int, tuple[int, ...]]:
    """For each tensor argument of ``node`` (in the order :class:`OpAlone` takes them), the axes
    whose size is symbolic in the program: dims declared dynamic reach the node there."""
    leaves = pytree.tree_leaves((node.args, node.kwargs))
    values = [leaf.meta.get("val") if isinstance(leaf, torch.fx.Node) else leaf for leaf in leaves]
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    dims = {index: tuple(axis for axis, size in enumerate(tensor.shape) if not isinstance(size, int))
            for index, tensor in enumerate(tensors)}
    return {index: axes for index, axes in dims.items() if axes}


def _used_outputs(node: torch.fx.Node) -> tuple[int, ...] | None:
    """The outputs of a node with several that the program reads (``getitem`` users), in order:
    an output nothing reads (the vectors svdvals asks ``_linalg_svd`` not to compute) is not judged.
    None when the node has one output or is read whole."""
    if not node.users or not all(user.target is operator.getitem and isinstance(user.args[1], int)
                                 for user in node.users):
        return None
    return tuple(sorted({user.args[1] for user in node.users}))


def _op_alone(name: str, target: Any, arguments: tuple[tuple, dict],
              dynamic_dims: dict[int, tuple[int, ...]] | None = None,
              used: tuple[int, ...] | None = None) -> NodeSample:
    module = OpAlone(target, arguments, used)
    inputs = tuple(leaf for leaf in pytree.tree_leaves(arguments) if isinstance(leaf, torch.Tensor))
    with torch.no_grad():
        outputs = module(*inputs)
    flat = pytree.tree_leaves(outputs)
    if not flat or not all(isinstance(value, torch.Tensor) for value in flat):
        raise RuntimeError("it does not return only tensors")
    if any(t.is_complex() for t in (*inputs, *flat)):
        # ONNX has no complex tensors: the exporter carries them as real pairs between nodes.
        raise RuntimeError("it takes or returns complex tensors, which ONNX carries as real pairs between nodes")
    expected = [(f"output_{index}", to_numpy(value)) for index, value in enumerate(flat)]
    return NodeSample(name, module, inputs, expected, dict(dynamic_dims or {}), arguments)
