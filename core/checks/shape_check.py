"""Every shape an export declares: torch and ONNX Runtime at other sizes of its dynamic dims.

An export with dynamic axes claims to work at sizes it was never traced at, and tracing is where
that claim silently breaks (``n = int(x.shape[1])`` becomes a constant; a fix folds the traced
sizes). So after a clean check at the example shapes, the model runs again at a larger and a
smaller size of every declared dim (dims of the same name move together; odd sizes, batch 1 and
above 1 among them; dims of different names that share their traced size also apart, in one more
set), in torch and in ONNX Runtime. A shape torch itself refuses is skipped and
said so; a difference, or ONNX Runtime failing, is a ``shape_specialised`` problem naming the
shape, the output, and the lines where the trace warned that it baked a value. The other sizes
are made by the fix script's support (``core/foundation/other_sizes.py``), so the script checks
the same ones.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from onnxruntime import InferenceSession

from fixport.core.checks.low_precision import Rounding, rounding_note, rounding_only
from fixport.core.checks.output_check import OUTPUT_KIND, output_origin, tolerances_for
from fixport.core.checks.value_reads import integer_inputs_read
from fixport.core.exporters.trace_warnings import trace_warnings
from fixport.core.foundation.comparison import flatten_outputs, to_numpy
from fixport.core.foundation.dynamic_dims import declared_dims
from fixport.core.foundation.input_sets import dims_inferred_from_sets
from fixport.core.foundation.other_sizes import SHAPE_SEED, other_size_inputs, random_like
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.input_sets import SETS_ONLY_NOTE
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.diagnosis import runtime_error_problem
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.ort_session import ORT_LOG_FATAL_ONLY, create_session
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.shape_sets import example_shape_set, shape_names_error, unknown_names
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import compare_output_lists
from fixport.core.words.cancel import ProgressCallback, report
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

__all__ = [
    "BAKED_BY_THE_TRACE",
    "FIXED_INPUT_HINT",
    "ShapeCheck",
    "ShapeSet",
    "baked_at",
    "check_other_shapes",
    "first_line",
    "generalisation_shapes",
    "in_range_note",
    "only_the_input_sets",
    "shape_label_note",
]

BAKED_BY_THE_TRACE = "The trace turned a size into a constant at "  # then the user's lines


@dataclass
class ShapeSet:
    """One set of inputs at other sizes of the declared dims."""

    label: str  # "len=12, batch=3"
    inputs: tuple[torch.Tensor, ...]
    # where some integer inputs' values were drawn from a wider range: the same sizes with every
    # input's values in the example's range, for a model that refuses the wider ones
    in_range: ShapeSet | None = None
    values_varied: tuple[str, ...] = ()  # the inputs drawn from a wider range than the example's

    @property
    def shapes(self) -> str:
        return ", ".join("x".join(str(d) for d in t.shape) or "scalar" for t in self.inputs)


def generalisation_shapes(loaded: LoadedModel, options: ExportOptions,
                          given: list[dict[str, tuple[int, ...]]] | None = None,
                          at_input_sets: bool = True) -> list[ShapeSet]:
    """build()'s other input sets ("set 2", ...; unless not ``at_input_sets``), then the shapes the
    user ``given`` (by input name), else a larger and a smaller size of every declared dim, and dims
    of one traced size apart (none without dynamic axes)."""
    numbered = enumerate(loaded.other_input_sets if at_input_sets else [], 2)
    sets = [ShapeSet(f"set {number}", inputs) for number, inputs in numbered]
    if given:
        return sets + [_given_shape_set(loaded, shapes, index) for index, shapes in enumerate(given)]
    if at_input_sets and only_the_input_sets(loaded, options, given):
        return sets
    example_inputs = tuple(loaded.example_inputs)
    dims = declared_dims(options.dynamic_axes, list(options.input_names or loaded.input_names),
                         [tuple(t.shape) for t in example_inputs])
    plain = other_size_inputs(dims, example_inputs)
    read = integer_inputs_read(loaded.module, example_inputs, list(loaded.input_names)) if plain else {}
    if not read:
        return sets + [ShapeSet(label, inputs) for label, inputs in plain]
    wider = other_size_inputs(dims, example_inputs, read)
    return sets + [ShapeSet(label, inputs) if label == plain_label else
                   ShapeSet(label, inputs, ShapeSet(plain_label, plain_inputs), tuple(read.values()))
                   for (label, inputs), (plain_label, plain_inputs) in zip(wider, plain)]


def in_range_note(shape_set: ShapeSet, exc: BaseException) -> str:
    """Why ``shape_set``'s in-range twin was checked instead: the wider values were refused by torch."""
    return (f"At {shape_set.label} torch itself fails ({type(exc).__name__}: {first_line(exc)}), so it was checked "
            f"at {shape_set.in_range.label if shape_set.in_range else ''} with every input's values in the example's "
            "range: a count computed from an input's values was not varied there.")


def only_the_input_sets(loaded: LoadedModel, options: ExportOptions,
                        given: list[dict[str, tuple[int, ...]]] | None = None) -> bool:
    """Whether the other sizes are build()'s input sets alone: the dims declared are those inferred
    from them, and no shapes are ``given`` (``SETS_ONLY_NOTE`` says why)."""
    return not given and dims_inferred_from_sets(options.dynamic_axes, loaded.proposed_dynamic_axes)


def _given_shape_set(loaded: LoadedModel, shapes: dict[str, tuple[int, ...]], index: int) -> ShapeSet:
    """Inputs at the shapes the user named (the others as traced); a name the model lacks is an error."""
    names = list(loaded.input_names)
    unknown = unknown_names(shapes, names)
    if unknown:
        traced = [tuple(t.shape) for t in loaded.example_inputs]
        raise shape_names_error(unknown, names, example_shape_set(names, traced))
    generator = torch.Generator().manual_seed(SHAPE_SEED + index)
    inputs = tuple(random_like(tensor, list(shapes.get(name, tensor.shape)), generator)
                   for name, tensor in zip(names, loaded.example_inputs))
    return ShapeSet(", ".join(f"{name}=" + "x".join(str(d) for d in shape) for name, shape in shapes.items()), inputs)


@dataclass
class ShapeCheck:
    """What the other shapes showed: problems, and notes on shapes that could not be tried."""

    problems: list[UnsupportedNode]
    notes: list[str]
    shapes_tried: list[str]


def check_other_shapes(loaded: LoadedModel, options: ExportOptions, model: OnnxModel, onnx_graph: Graph,
                       source_graph: Graph | None, warnings: list[str],
                       given: list[dict[str, tuple[int, ...]]] | None = None,
                       at_input_sets: bool = True,
                       sizes_refused: Callable[[Sequence[torch.Tensor]], str] | None = None,
                       progress: ProgressCallback | None = None) -> ShapeCheck:
    """Torch and ONNX Runtime at each generalisation shape, or at the ``given`` ones (see the module
    docstring), each reported on ``progress``; a set ``sizes_refused`` names a broken guard for is a
    note, not a problem."""
    sets_only = at_input_sets and only_the_input_sets(loaded, options, given)
    check = ShapeCheck([], [SETS_ONLY_NOTE] if sets_only else [], [])
    sets = generalisation_shapes(loaded, options, given, at_input_sets)
    if not sets:
        return check
    tolerances = tolerances_for(loaded)
    baked = _baked_lines(warnings)
    rounded: dict[str, list[Rounding]] = {}  # by shape label: outputs off by their precision's rounding only
    # torch at every set first, then ONNX Runtime at every set: the weights torch reads and the ones the
    # session reads need not be in memory at once (resident_weights.py)
    expected_at: list[tuple[ShapeSet, list]] = []
    for shape_set in sets:
        report(progress, 0.0, f"{shape_set.label} in torch")
        try:
            with torch.no_grad():
                expected_at.append((shape_set, flatten_outputs(loaded.module(*shape_set.inputs))))
        except Exception as exc:  # the model itself does not run there: not the export's fault
            if shape_set.in_range is not None:  # the wider values are refused: the same sizes in range
                check.notes.append(in_range_note(shape_set, exc))
                sets.insert(sets.index(shape_set) + 1, shape_set.in_range)
                continue
            check.notes.append(f"Not checked at {shape_set.label} ({shape_set.shapes}): torch itself fails there "
                               f"({type(exc).__name__}: {first_line(exc)}).")
    if not expected_at:
        return check
    session = create_session(model, "cpu", log_severity=ORT_LOG_FATAL_ONLY).session
    actual_at = []
    for shape_set, _ in expected_at:
        report(progress, 0.0, f"{shape_set.label} in ONNX Runtime")
        actual_at.append(_onnx_outputs(session, loaded, shape_set))
    del session  # the verdicts below may run torch again (in float32, for rounding): one copy of the weights
    for (shape_set, expected), actual in zip(expected_at, actual_at):
        check.shapes_tried.append(shape_set.label)
        found, rounding = _problems_at(loaded, shape_set, expected, actual, tolerances, onnx_graph, source_graph,
                                       baked)
        refused = sizes_refused(shape_set.inputs) if found and sizes_refused else ""
        if refused:  # the captured program itself holds at other sizes only: ONNX cannot do better there
            check.shapes_tried.remove(shape_set.label)
            check.notes.append(f"Not checked at {shape_set.label} ({shape_set.shapes}): the model's code assumes "
                               f"other sizes there, and torch.export's program refuses them ({refused}).")
            continue
        check.problems.extend(found)
        if rounding:
            rounded[shape_set.label] = rounding
    check.problems = _one_per_node(check.problems)
    if rounded:
        check.notes.append(rounding_note([r for found in rounded.values() for r in found],
                                         f"at other sizes ({'; '.join(rounded)})"))
    return check


def _onnx_outputs(session: InferenceSession, loaded: LoadedModel, shape_set: ShapeSet) -> list[np.ndarray] | Exception:
    """ONNX Runtime's outputs at one shape set, or the exception it raised there."""
    try:
        return session.run(None, feeds_for(session, loaded.input_names, [to_numpy(t) for t in shape_set.inputs]))
    except Exception as exc:  # noqa: BLE001 -- ORT's own exception types; the failing node is named in the text
        return exc


def _problems_at(loaded: LoadedModel, shape_set: ShapeSet, expected: list[tuple[str, np.ndarray]],
                 actual: list[np.ndarray] | Exception, tolerances: ToleranceTable, onnx_graph: Graph,
                 source_graph: Graph | None, baked: list[tuple[str, str]]
                 ) -> tuple[list[UnsupportedNode], list[Rounding]]:
    """What ONNX Runtime got wrong at one shape set (its ``actual`` outputs, or its exception), against
    torch's ``expected`` outputs there, and the outputs whose difference is only low-precision rounding
    (not problems)."""
    if isinstance(actual, Exception):
        problem = runtime_error_problem(str(actual), onnx_graph, source_graph, mark=False)
        return [_specialised(problem, shape_set, f"ONNX Runtime fails there: {first_line(actual)}", baked)], []
    stats = compare_output_lists(expected, actual, tolerances, keep_plot_data=False)
    failing = [output for output in stats if not output.passed]
    rounding = rounding_only(loaded.module, shape_set.inputs, expected, actual, failing) if failing else {}
    problems = []
    for index, output in enumerate(stats):
        if output.passed or output.name in rounding:
            continue
        detail = output.problem or f"max abs {output.max_abs:.3g} (atol {output.atol:g}, rtol {output.rtol:g})"
        where = _output_origin(onnx_graph, source_graph, index)
        problems.append(_specialised(where, shape_set, f"output {output.name} differs from torch's: {detail}", baked))
    return problems, list(rounding.values())


def _one_per_node(problems: list[UnsupportedNode]) -> list[UnsupportedNode]:
    """The first problem at each node, saying at which other shapes the same node failed too."""
    first: dict[tuple[str, str], UnsupportedNode] = {}
    also: dict[tuple[str, str], list[str]] = {}
    for problem in problems:
        key = (problem.kind, problem.instance or problem.onnx_node)
        if key in first:
            also[key].append(problem.message.split(" (inputs", 1)[0].removeprefix("At "))
        else:
            first[key], also[key] = problem, []
    return [replace(p, message=p.message + (f" Also wrong at {'; '.join(also[k])}." if also[k] else ""))
            for k, p in first.items()]


def _output_origin(onnx_graph: Graph, source_graph: Graph | None, index: int) -> UnsupportedNode:
    """A problem placed at the source node that produces ONNX output ``index`` (or at the output)."""
    onnx_output = onnx_graph.outputs[index] if index < len(onnx_graph.outputs) else ""
    producer, origin = output_origin(onnx_graph, source_graph, onnx_output)
    return UnsupportedNode(kind=origin.kind if origin else OUTPUT_KIND, instance=origin.id if origin else "",
                           reason=ProblemReason.SHAPE_SPECIALISED, message="", scope=origin.scope if origin else "",
                           source=origin.source if origin else "", onnx_node=producer.id if producer else "")


def _specialised(at: UnsupportedNode, shape_set: ShapeSet, what: str, baked: list[tuple[str, str]]
                 ) -> UnsupportedNode:
    """``at`` as a shape_specialised problem: the shape, what went wrong, and where the trace baked a value."""
    if baked:
        nearest = sorted(baked, key=lambda line: _distance(line[0], at.source))  # the node's own line first
        lines = "; ".join(f"{where} ({text})" for where, text in nearest[:3])
        why = (f" {BAKED_BY_THE_TRACE}{lines}: keep sizes as tensors there (x.size(1) "
               "without int(), torch.narrow, reshape with -1), or drop the dynamic axis.")
    elif shape_set.values_varied:
        names = " and ".join(shape_set.values_varied)
        why = (f" {names} took values beyond the example's there, and forward() reads them into Python: a count "
               "computed from them (of graphs, images, boxes) was turned into a constant. Compute it as a tensor "
               "(no int(), .item() or len() on it), or try the dynamo exporter (--exporter dynamo), which keeps "
               "it symbolic.")
    else:
        why = (" The export is specialised to the traced sizes: a fix or an op that folds sizes into constants "
               "(`python main.py compare` at that shape names the first divergent node), or drop the dynamic axis.")
    message = (f"At {shape_set.label} (inputs {shape_set.shapes}), {what}. "
               f"It matches at the traced shapes only.{why}")
    source = at.source or (nearest[0][0] if baked else "")
    return UnsupportedNode(kind=at.kind, instance=at.instance, reason=ProblemReason.SHAPE_SPECIALISED,
                           message=message, scope=at.scope, source=source, onnx_node=at.onnx_node,
                           python_op_name=at.python_op_name)


def baked_at(problem: UnsupportedNode) -> str:
    """The user's line where the trace turned a size into a constant, for a shape_specialised
    problem that names one ('' otherwise: the export or a fix specialised it)."""
    if problem.reason != ProblemReason.SHAPE_SPECIALISED or BAKED_BY_THE_TRACE not in problem.message:
        return ""
    return problem.message.split(BAKED_BY_THE_TRACE, 1)[1].split(" ", 1)[0]


def _distance(where: str, source: str) -> tuple[bool, int]:
    """How far apart two 'file.py:12' places are: another file is farther than any line of the same."""
    file, _, line = where.rpartition(":")
    other_file, _, other_line = source.rpartition(":")
    if file != other_file or not line.isdigit() or not other_line.isdigit():
        return True, 0
    return False, abs(int(line) - int(other_line))


def _baked_lines(warnings: list[str]) -> list[tuple[str, str]]:
    """(user line, what) for each TracerWarning the export raised at a line of the user's code."""
    return [(warning.line, warning.what) for warning in trace_warnings(warnings)]


FIXED_INPUT_HINT = " (the ONNX model's inputs have fixed sizes there: declare the dim with --dynamic-axes)"


def first_line(exc: BaseException) -> str:
    line = (str(exc).strip().splitlines() or [""])[0][:300]
    return line + (FIXED_INPUT_HINT if "invalid dimensions for input" in line else "")


def shape_label_note(check: ShapeCheck) -> list[str]:
    """One note naming the shapes the check ran at (for the report)."""
    if not check.shapes_tried:
        return list(check.notes)
    return [f"Also checked at other sizes: {'; '.join(check.shapes_tried)}.", *check.notes]

