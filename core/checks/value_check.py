"""Inputs whose values the export does not follow: dropped from the ONNX inputs, or read into Python.

A trace records the Python values a model computes from an input (``grid.tolist()``,
``int(sizes[0])``) as constants, and drops an input it then never uses as a tensor: the ONNX
model answers for the example values only, and the output check on those values passes. So
after a clean check, each input that the ONNX model does not take, or whose values forward()
turns into Python values (:mod:`value_reads`), is tried at other values of the same shape:
permutations of its last axis first (a grid's height and width swapped keeps its product), then
neighbours and random values. The first set torch accepts is run in ONNX Runtime too. A
difference is a ``baked_input`` problem; so are values a trace warned it turned into constants
and a dropped input's values the model reads (a match at one other set is luck: a branch taken
both times), and a dropped input torch refuses every other value of. An input torch ignores, or
one the export follows (the dynamo exporter keeps ``.item()`` values symbolic), stays clean.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fixport.core.checks.low_precision import rounding_only
from fixport.core.checks.output_check import tolerances_for
from fixport.core.checks.shape_check import first_line
from fixport.core.checks.value_reads import input_value_reads
from fixport.core.exporters.profiles import profile_for
from fixport.core.exporters.trace_warnings import (
    TraceWarning,
    constants_into,
    kept_reads,
    nodes_it_produced,
    trace_warnings,
)
from fixport.core.foundation.comparison import flatten_outputs, to_numpy
from fixport.core.foundation.other_sizes import SHAPE_SEED, random_like
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.ort_session import ORT_LOG_FATAL_ONLY, create_session
from fixport.core.project.export_options import ExportOptions
from fixport.core.statistics.output_stats import compare_output_lists
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

INPUT_KIND = "onnx::input"  # a problem of a model input that no traced node takes
MAX_OTHER_VALUE_TRIES = 8  # value sets tried in torch before giving up on one input
MAX_LABELLED_ELEMENTS = 12  # values shown in full in a label; bigger tensors are named by their seed
PERMUTED_AXIS_MAX = 4  # a last axis this short is permuted (grids: t, h, w); longer ones are not


@dataclass
class OtherValues:
    """One input at other values, the others as given: what torch and ONNX Runtime are run on."""

    position: int
    label: str  # "sizes=[[3, 2], [2, 3]]"
    inputs: tuple[torch.Tensor, ...]


@dataclass
class SuspectInput:
    """An input the export may not follow: whether the ONNX model takes it, where forward() reads it."""

    position: int
    name: str
    dropped: bool
    read_at: list[str] = field(default_factory=list)
    floating: bool = False  # data (an image, features) rather than ids, sizes or flags


@dataclass
class InputValueCheck:
    """What other input values showed: problems, notes, and the value sets torch accepted."""

    problems: list[UnsupportedNode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    values_tried: list[OtherValues] = field(default_factory=list)


def suspect_inputs(loaded: LoadedModel, options: ExportOptions, onnx_inputs: list[str],
                   warnings: list[str], every_input: bool = False) -> list[SuspectInput]:
    """The inputs the ONNX model does not take, and those whose values forward() reads into Python.

    A trace (the TorchScript exporter) bakes exactly the reads it warns about, so there only the
    lines with a TracerWarning count (a read behind ``torch.jit.is_tracing()`` is not traced);
    torch.export warns of none, so there every read of an integer or boolean input does, and
    with ``every_input`` (a capture that ran code changed for it) every read of any input."""
    names = feed_names(loaded, options)
    example = list(loaded.example_inputs)
    taken = set(onnx_inputs)
    # by name, where the model has fewer inputs than forward() was given (names the export made up for
    # inputs it was given no name for are not missing ones)
    fewer = len(taken) < len(names) and any(name in taken for name in names)
    dropped = [position for position, name in enumerate(names) if fewer and name not in taken]
    traced = profile_for(options.exporter).warns_of_baked_values
    warned = {warning.line for warning in trace_warnings(warnings)} | kept_reads(warnings)  # kept: checked too
    if not (dropped or (warned if traced else every_input or any(_integer_or_bool(t) for t in example))):
        return []
    reads = {position: [line for line in lines if line in warned] if traced else lines
             for position, lines in input_value_reads(loaded.module, example).items()}
    positions = sorted(set(dropped) | {position for position, lines in reads.items() if lines})
    return [SuspectInput(p, names[p], p in dropped, reads.get(p, []), example[p].is_floating_point())
            for p in positions if isinstance(example[p], torch.Tensor)]


def _integer_or_bool(value: object) -> bool:
    return isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex())


def feed_names(loaded: LoadedModel, options: ExportOptions) -> list[str]:
    """The ONNX name each example input is fed by (the export's own names where it was given some)."""
    names = list(options.input_names or [])
    return names if len(names) == len(loaded.example_inputs) else list(loaded.input_names)


def other_values(tensor: torch.Tensor) -> Iterator[tuple[torch.Tensor, str]]:
    """Other values of ``tensor``'s shape and dtype, most plausible first, each with how it was made."""
    if tensor.numel() == 0:
        return
    integer = not (tensor.dtype.is_floating_point or tensor.dtype.is_complex or tensor.dtype == torch.bool)
    if integer and tensor.dim() >= 1 and 2 <= tensor.shape[-1] <= PERMUTED_AXIS_MAX:
        last = tensor.shape[-1]
        for first, second in sorted(itertools.combinations(range(last), 2), key=lambda pair: (-pair[0], -pair[1])):
            order = list(range(last))
            order[first], order[second] = second, first  # the last two first: a grid's height and width
            yield tensor[..., order], ""
    if integer and tensor.dim() >= 2 and tensor.shape[0] >= 2:
        yield tensor.flip(0), ""
    if integer:
        yield tensor + 1, ""
        yield torch.where(tensor > 1, tensor - 1, tensor), ""
        yield tensor * 2, ""
    if tensor.dtype == torch.bool:
        yield ~tensor, ""
    if tensor.dtype.is_floating_point and tensor.numel() == 1:
        yield tensor + 1, ""  # a factor or a threshold: random values are often ones torch refuses (a scale below 0)
    yield random_like(tensor, tensor.shape, torch.Generator().manual_seed(SHAPE_SEED)), f"seed {SHAPE_SEED}"


def value_label(name: str, tensor: torch.Tensor, how: str) -> str:
    """'sizes=[[3, 2], [2, 3]]', or 'ids=other random values (seed 7)' for a big tensor."""
    made = not (tensor.dtype.is_floating_point or tensor.dtype.is_complex) or not how  # not random floats
    if tensor.numel() <= MAX_LABELLED_ELEMENTS and made:
        return f"{name}={tensor.tolist()}"
    return f"{name}=other {'random ' if how else ''}values" + (f" ({how})" if how else "")


def check_input_values(loaded: LoadedModel, options: ExportOptions, model: OnnxModel, onnx_graph: Graph,
                       source_graph: Graph | None, warnings: list[str], every_input: bool = False) -> InputValueCheck:
    """Each suspect input (:func:`suspect_inputs`, ``every_input`` passed on) at other values in
    torch and ONNX Runtime; see the module docstring for what is a problem."""
    check = InputValueCheck()
    suspects = suspect_inputs(loaded, options, list(onnx_graph.inputs), warnings, every_input)
    if not suspects:
        return check
    session = create_session(model, "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
    names = feed_names(loaded, options)
    for suspect in suspects:
        found = _first_accepted(loaded, suspect)
        if found is None:  # a dropped input whose every other value torch refuses: its values matter
            evidence, differs = _torch_refuses(suspect), suspect.dropped
        else:
            other, expected = found
            check.values_tried.append(other)
            evidence, differs = _runtime_at(session, names, other, expected, loaded)
        problem = _problem_or_none(suspect, evidence, differs, source_graph, warnings, options.exporter)
        if problem is not None:
            check.problems.append(problem)
        elif found is not None:  # like the shape check's "Also checked at other sizes"
            check.notes.append(f"Input {suspect.name}: " + (
                f"its values are read at {', '.join(suspect.read_at)}; " if suspect.read_at else
                "not an input of the ONNX model, and torch's output does not depend on its values either; ")
                + f"the export also matched torch at {found[0].label}.")
    return check


def _first_accepted(loaded: LoadedModel, suspect: SuspectInput) -> tuple[OtherValues, list] | None:
    """The first other value set of ``suspect`` torch runs on, with torch's outputs there."""
    original = loaded.example_inputs[suspect.position]
    distinct = (pair for pair in other_values(original) if not torch.equal(pair[0], original))
    for value, how in itertools.islice(distinct, MAX_OTHER_VALUE_TRIES):
        inputs = tuple(value if i == suspect.position else t for i, t in enumerate(loaded.example_inputs))
        try:
            with torch.no_grad():
                expected = flatten_outputs(loaded.module(*inputs))
        except Exception:  # the model refuses these values (a grid that does not fit the patches)
            continue
        return OtherValues(suspect.position, value_label(suspect.name, value, how), inputs), expected
    return None


def _torch_refuses(suspect: SuspectInput) -> str:
    return (f"torch itself fails at every other value of {suspect.name} tried, since its values must fit the "
            "other inputs: no other value could be checked")


def _runtime_at(session: Any, names: list[str], other: OtherValues, expected: list, loaded: LoadedModel
                ) -> tuple[str, bool]:
    """What ONNX Runtime gave at ``other`` against torch's ``expected``, and whether it differs."""
    try:
        actual = session.run(None, feeds_for(session, names, [to_numpy(t) for t in other.inputs]))
    except Exception as exc:  # ORT's own exception types
        return f"at {other.label} ONNX Runtime fails: {first_line(exc)}", True
    stats = compare_output_lists(expected, actual, tolerances_for(loaded), keep_plot_data=False)
    failing = [s for s in stats if not s.passed]
    rounding = rounding_only(loaded.module, other.inputs, expected, actual, failing) if failing else {}
    failing = [s for s in failing if s.name not in rounding]
    if not failing:  # to the precision's rounding, held to the model run in float32 as everywhere
        return f"at {other.label} it matched torch", False
    worst = failing[0]
    detail = worst.problem or f"max abs {worst.max_abs:.3g} (atol {worst.atol:g}, rtol {worst.rtol:g})"
    return f"at {other.label} output {worst.name} differs from torch's: {detail}", True


def _problem_or_none(suspect: SuspectInput, evidence: str, differs: bool, source_graph: Graph | None,
                     warnings: list[str], exporter: str) -> UnsupportedNode | None:
    """A ``baked_input`` problem for ``suspect``, or None where the export follows it (or torch ignores it).

    Values a trace turned into constants, or that a dropped input's reads consumed, are fixed at the
    example's whatever the other values showed: a match there is luck (a branch taken both times)."""
    warned = {w.line: w for w in trace_warnings(warnings)}
    baked = [warned[line] for line in suspect.read_at if line in warned]  # in the order forward() read them
    fixed = bool(baked) or (suspect.dropped and bool(suspect.read_at))
    if not (differs or fixed):
        return None
    if not differs and evidence.endswith("it matched torch"):
        evidence = evidence.replace("it matched torch", "it happened to match torch") + (
            ", but the values read there stay the example's")
    if suspect.dropped:
        what = "is not an input of the ONNX model"
    elif baked:
        what = "is an input of the ONNX model, but the trace turned values computed from it into constants"
    else:
        what = "is an input of the ONNX model, but the export does not follow its values"
    where = ""
    if suspect.read_at:
        said = f" (TracerWarning: {baked[0].what})" if baked else ""
        where = f"; forward() reads its values at {', '.join(suspect.read_at)}{said}"
    message = (f"Input {suspect.name} {what}{where}: the export holds for the example values only "
               f"({evidence}). {_what_to_do(suspect, exporter)}")
    return _placed(suspect, baked, source_graph, message)


def _what_to_do(suspect: SuspectInput, exporter: str) -> str:
    at = f" at {suspect.read_at[0]}" if suspect.read_at else ""
    tensor_ops = (f"compute with {suspect.name} as a tensor{at} (no .tolist(), .item(), int(), len() or `if` on it, "
                  "torch.where for a branch)")
    constants = ("" if suspect.floating else
                 "; or, if its values never change, drop it from forward() and make them constants there")
    remedy = profile_for(exporter).baked_input_remedy
    if remedy:
        return f"{remedy}; or {tensor_ops}{constants}."
    return f"Make the export follow it: {tensor_ops}{constants}."


def _placed(suspect: SuspectInput, baked: list[TraceWarning], source_graph: Graph | None,
            message: str) -> UnsupportedNode:
    """The problem at the traced node that took the first baked value placed in the graph, else at the input."""
    for warning in baked:
        nodes = nodes_it_produced(warning, source_graph) if source_graph is not None else []
        if nodes:  # the node the baked constant feeds, where the line has several
            node = next((n for n in nodes if constants_into(n, source_graph)), nodes[0])
            return UnsupportedNode(kind=node.kind, instance=node.id, reason=ProblemReason.BAKED_INPUT,
                                   message=message, scope=node.scope, source=warning.line)  # the line that read it
    source = suspect.read_at[0] if suspect.read_at else ""
    return UnsupportedNode(kind=INPUT_KIND, instance="", reason=ProblemReason.BAKED_INPUT, message=message,
                           scope="", source=source)

