"""Line two exports' compared values up through their links to the source, and hold them to each other.

Both exporters tie each ONNX node to the source node it came from, and that source node to its
module scope and source line (``torch.onnx`` keeps them for TorchScript, ``nn_module_stack`` and the
stack trace for torch.export). Values are paired by (scope, source line) first, then by the source
op (each graph spells it its own way: ``aten::_convolution``, ``aten::conv2d.default``), else by
ONNX op, where the shapes agree; a line's last value pairs with the other's last as its result.
Where a line has several candidates, the closest value wins: the same torch value computed twice.
A pair further apart than their two distances to torch allow stands for two different values: dropped.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fixport.core.foundation.comparison import difference_metrics
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.records.compare_result import NodeError
from fixport.core.records.exporter_comparison import AlignedNode, OutputAgreement
from fixport.core.statistics.output_stats import largest_magnitude

SAME_VALUE_SLACK = 1e-6  # float rounding in the bound of _same_value
# Two exports each within tolerance of torch, on either side of it, can be twice that apart: they
# differ from each other only beyond twice the tolerance.
BETWEEN_EXPORTS = 2.0


@dataclass
class NodeSide:
    """One export's compared values: its per-node errors against torch and the ONNX values themselves."""

    exporter: str
    errors: list[NodeError]  # in topological order
    source_ops: dict[str, str]  # source node key -> its op kind as the source graph spells it
    values: dict[str, np.ndarray]  # ONNX value name -> its value on the shared input set
    output_names: list[str] = field(default_factory=list)  # the export's graph outputs, in order


def op_name(kind: str) -> str:
    """``aten::_convolution`` and ``aten::conv2d.default`` -> ``convolution``, ``conv2d``: the op
    without namespace, overload or leading underscores."""
    name = kind.rpartition("::")[2] or kind
    return name.split(".")[0].lstrip("_")


def _pairs(first: list[NodeError], second: list[NodeError], first_ops: dict[str, str], second_ops: dict[str, str],
           distance: Callable[[NodeError, NodeError], float]) -> list[tuple[NodeError, NodeError]]:
    """The values of one (scope, source line) paired: same source op, then same ONNX op, then the
    last; among several candidates (a line with three casts), the one whose value is closest."""
    pairs: list[tuple[NodeError, NodeError]] = []
    free = list(second)

    def take(error: NodeError, same: Callable[[NodeError, NodeError], bool]) -> bool:
        candidates = [other for other in free if other.shape == error.shape and same(error, other)]
        if not candidates:
            return False
        match = min(candidates, key=lambda other: distance(error, other))  # the first of equals: graph order
        free.remove(match)
        pairs.append((error, match))
        return True

    def same_op(a: NodeError, b: NodeError) -> bool:
        return op_name(first_ops.get(a.source_node, "")) == op_name(second_ops.get(b.source_node, "")) != ""

    unpaired = [error for error in first if not take(error, same_op)]
    unpaired = [error for error in unpaired if not take(error, lambda a, b: a.onnx_kind == b.onnx_kind)]
    if unpaired and free and unpaired[-1] is first[-1] and free[-1] is second[-1]:
        take(unpaired[-1], lambda a, b: True)
    return pairs


def scope_path(scope: str) -> str:
    """A module scope as one path, whatever the exporter wrote: ``mlp/mlp/0`` (TorchScript names a
    Sequential subclass and its own scope) and ``mlp/0`` are one place; dots and slashes alike."""
    parts = [part for part in scope.replace(".", "/").split("/") if part]
    return "/".join(part for index, part in enumerate(parts) if index == 0 or part != parts[index - 1])


def align(first: NodeSide, second: NodeSide, tolerances: ToleranceTable) -> tuple[list[AlignedNode], dict[str, int]]:
    """Every value both exports compared at the same place, held to each other, in the first export's
    order; and per exporter, how many of its compared values found no counterpart.

    Values are paired by module scope and source line; what is left, by module scope alone (the two
    exporters may name different frames of one call: the line of a helper, or the line calling it)."""
    def distance(a: NodeError, b: NodeError) -> float:
        one, other = _array(first.values.get(a.output)), _array(second.values.get(b.output))
        if one is None or other is None or one.shape != other.shape:
            return math.inf
        return float(difference_metrics(one, other, 0.0, 0.0)["max_abs"])

    pairs: list[tuple[NodeError, NodeError]] = []
    for place in (lambda error: (scope_path(error.scope), error.source), lambda error: scope_path(error.scope)):
        paired = {id(error) for pair in pairs for error in pair}
        first_groups = _groups([error for error in first.errors if id(error) not in paired], place)
        second_groups = _groups([error for error in second.errors if id(error) not in paired], place)
        pairs += [pair for key, errors in first_groups.items()
                  for pair in _pairs(errors, second_groups.get(key, []), first.source_ops, second.source_ops,
                                     distance)]
    order = {id(error): index for index, error in enumerate(first.errors)}
    pairs.sort(key=lambda pair: order[id(pair[0])])
    aligned = [node for node in (_aligned(a, b, first, second, tolerances) for a, b in pairs) if _same_value(node)]
    unaligned = {first.exporter: len(first.errors) - len(aligned), second.exporter: len(second.errors) - len(aligned)}
    return aligned, unaligned


def _same_value(node: AlignedNode) -> bool:
    """Whether the pair can stand for one torch value: each export's distance to it bounds their
    distance to each other (|a - b| <= |a - t| + |t - b|). Two casts on one line, both exact, that are
    2 apart are two different values paired by mistake, not a difference between the exports."""
    if node.max_abs is None:
        return True
    bound = sum(node.vs_torch.values())
    if not math.isfinite(bound) or not math.isfinite(node.max_abs):
        return True
    return node.max_abs <= bound * (1 + SAME_VALUE_SLACK) + SAME_VALUE_SLACK


def _groups(errors: list[NodeError], place: Callable[[NodeError], Any]) -> dict[Any, list[NodeError]]:
    """``errors`` with a source line (nothing else ties a value to the other export), by ``place``."""
    groups: dict[Any, list[NodeError]] = {}
    for error in errors:
        if error.source:
            groups.setdefault(place(error), []).append(error)
    return groups


def _aligned(a: NodeError, b: NodeError, first: NodeSide, second: NodeSide, tolerances: ToleranceTable) -> AlignedNode:
    node = AlignedNode(
        scope=a.scope, source=a.source, op=first.source_ops.get(a.source_node, a.source_kind),
        onnx_nodes={first.exporter: a.onnx_node, second.exporter: b.onnx_node},
        onnx_kinds={first.exporter: a.onnx_kind, second.exporter: b.onnx_kind}, shape=a.shape,
        vs_torch={first.exporter: a.max_abs, second.exporter: b.max_abs},
        exceeds_torch={first.exporter: a.exceeds, second.exporter: b.exceeds})
    metrics = _between(first.values.get(a.output), second.values.get(b.output), tolerances)
    if metrics is not None:
        node.max_abs, node.differ = metrics["max_abs"], metrics["mismatch_count"] > 0
    return node


def _array(value: Any) -> np.ndarray | None:
    """``value`` where it is a tensor; None for a sequence value (ONNX Runtime returns those as lists)."""
    return value if isinstance(value, np.ndarray) else None


def _between(one: Any, other: Any, tolerances: ToleranceTable) -> dict | None:
    """The two exports' values against each other (the first as the reference), None where either is
    missing or not a tensor."""
    one, other = _array(one), _array(other)
    if one is None or other is None or one.shape != other.shape:
        return None
    rtol, atol = tolerances.for_values(str(one.dtype), largest_magnitude(one))
    return difference_metrics(one, other, BETWEEN_EXPORTS * rtol, BETWEEN_EXPORTS * atol)


def output_agreements(first: NodeSide, second: NodeSide, tolerances: ToleranceTable) -> list[OutputAgreement]:
    """Each output of the two exports against each other, by position."""
    agreements = []
    for index, (one, other) in enumerate(zip(first.output_names, second.output_names)):
        a, b = first.values.get(one), second.values.get(other)
        names = {first.exporter: one, second.exporter: other}
        metrics = _between(a, b, tolerances)
        if metrics is None:
            shapes = " vs ".join(_shape_word(v) for v in (a, b))
            agreements.append(OutputAgreement(index, names, tuple(getattr(a, "shape", ())), float("nan"),
                                              float("nan"), False, f"not comparable: {shapes}"))
            continue
        agreements.append(OutputAgreement(index, names, tuple(a.shape), metrics["max_abs"], metrics["max_rel"],
                                          metrics["mismatch_count"] == 0))
    if len(first.output_names) != len(second.output_names):
        agreements.append(OutputAgreement(len(agreements), {}, (), float("nan"), float("nan"), False,
                                          f"{first.exporter} has {len(first.output_names)} output(s), "
                                          f"{second.exporter} {len(second.output_names)}"))
    return agreements


def _shape_word(value: Any) -> str:
    if value is None:
        return "missing"
    if not isinstance(value, np.ndarray):
        return f"a sequence of {len(value)} tensor(s)"
    return "x".join(map(str, value.shape))
