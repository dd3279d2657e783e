"""The `compare` job: torch vs ONNX Runtime on several input sets, then node by node.

Run 0 uses the example inputs, run k a fresh random input set (seed k) shaped like them: some
export bugs (a value computed outside the tracer and baked in as a constant) only show on a
second input. When an output fails (or always, on run 0, for the plots), a diagnosing export
without constant folding is compared node by node to find where the outputs start to diverge.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
import torch

from fixport.core.analysis.job_context import JobContext, open_job
from fixport.core.checkpoints.export_dtype import checkpoint_export_dtype
from fixport.core.checkpoints.generation_check import generation_components, generation_with_other_component
from fixport.core.checks.low_precision import Rounding, rounding_note, rounding_only
from fixport.core.checks.shape_check import (
    ShapeSet,
    first_line,
    generalisation_shapes,
    in_range_note,
    only_the_input_sets,
)
from fixport.core.checks.value_check import check_input_values
from fixport.core.checks.value_reads import integer_inputs_read
from fixport.core.comparison.intermediates import analyze_nodes
from fixport.core.deployment.optimizer_guard import Reference, guard_optimizers
from fixport.core.exporters.base import ComparableExport, Exporter
from fixport.core.foundation.comparison import flatten_outputs, to_numpy
from fixport.core.foundation.errors import FixportError, ModelLoadError
from fixport.core.foundation.low_precision import LOW_PRECISION_NAMES
from fixport.core.foundation.other_sizes import random_like, wider_label
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.input_sets import SETS_ONLY_NOTE
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.cuda_precision import DEPLOYED, check_precision
from fixport.core.onnx_io.diagnosis import runtime_error_problem
from fixport.core.onnx_io.onnx_files import read_model_file
from fixport.core.onnx_io.onnx_graph import onnx_to_graph
from fixport.core.onnx_io.onnx_model import OnnxModel, beside_file
from fixport.core.onnx_io.openvino_errors import openvino_error_problem, openvino_error_summary
from fixport.core.onnx_io.openvino_session import INFERENCE_PRECISION, openvino_tolerances
from fixport.core.onnx_io.ort_errors import ort_error_summary
from fixport.core.onnx_io.ort_session import SessionInfo, quiet_run
from fixport.core.onnx_io.placement import collect_placement
from fixport.core.onnx_io.reference_plan import ReferencePlan, plan_references
from fixport.core.onnx_io.resident_weights import no_turns, turn_taker
from fixport.core.onnx_io.runtime_cost import runtime_cost
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import FixMapping, mapping_for_node
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.records.compare_result import MAX_RUNS, CompareResult, NodeAnalysis
from fixport.core.records.runtime_cost import RuntimeCost, validate_latency_runs
from fixport.core.statistics.output_stats import OutputStats, compare_output_lists, missing_output, worst_of_runs
from fixport.core.words.advice import Step, advice_for, advice_without_a_list, sentence
from fixport.core.words.cancel import (
    CancelCallback,
    Cancelled,
    ProgressCallback,
    check_cancelled,
    report,
    within,
)
from fixport.core.words.errors import ExportError, NothingToCompareError
from fixport.core.words.graph import Graph
from fixport.core.words.internal_error import InternalError, internal_error, raised_in_fixport
from fixport.core.words.optimizer_guard import OptimizerReport, parse_optimize
from fixport.core.words.runtimes import OPENVINO, OPENVINO_NAME, ORT, RUNTIME_TITLES, refuse_missing_runtime
from fixport.core.words.vocabulary import LOADING_STAGE

if TYPE_CHECKING:
    from fixport.core.records.requests import CompareRequest

TORCH_DEVICES = ("cpu", "cuda")
BAKED_WHILE_TRACING_NOTE = ("At the other size no ONNX node departs from the source graph, which fails there too: the "
                            "size was turned into a constant while the model was captured (`check` names the lines).")
VALUES_BAKED_WHILE_TRACING_NOTE = ("At the other values no ONNX node departs from the source graph, which fails there "
                                   "too: the values were turned into constants while the model was captured.")
PER_NODE_DEVICES_NOTE = ("Per-node analysis: ONNX Runtime captured every intermediate value on {providers}; the "
                         "source graph re-ran on CPU, where the exporter captured it (its constants live there).")
CUDA_PROVIDER = "CUDAExecutionProvider"
MATCHED_AT_SIZE_NOTE = ("Per-node analysis skipped: every output matches torch, and for a model this size it "
                        "exports the model again and holds every node's values in both torch and ONNX Runtime. "
                        "An output that differs gets it.")
RUNTIME_FAILS_ON_SET = "ONNX Runtime fails on input set {run}"  # then its message
RUNTIME_FAILED_NOTE = ("Per-node analysis skipped: ONNX Runtime cannot run input set(s) {sets}, so there are no values "
                       "to compare node by node there; its message (in the rows above) names the failing node. A count "
                       "or size the trace turned into a constant (one computed from an input's values, or a traced "
                       "size) fails this way: `check` names the line.")


def input_sets(example_inputs: Sequence[torch.Tensor], runs: int, wider: dict[int, str] | None = None
               ) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    """(label, inputs): run 0 the example inputs; run k random tensors like them (seed k), ints in
    the same range, except the integer inputs in ``wider`` (position -> name, those forward()
    reads into Python) from run 2 on: drawn from a wider range, so a count computed from their
    values (of graphs, boxes) varies too."""
    wider = wider or {}
    sets = [("example inputs", tuple(example_inputs))]
    for seed in range(1, runs):
        generator = torch.Generator().manual_seed(seed)
        widen = wider if seed >= 2 else {}
        sets.append((", ".join([f"random, seed {seed}", *(wider_label(name, example_inputs[p])
                                                          for p, name in widen.items())]),
                     tuple(random_like(t, t.shape, generator, p in widen) for p, t in enumerate(example_inputs))))
    return sets


def compare(request: CompareRequest, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> CompareResult:
    """Compare torch and ONNX Runtime outputs of one model; see the module docstring."""
    started = time.perf_counter()
    runs, onnx_path, mappings = request.runs, request.onnx_path, list(request.mappings)
    if not 1 <= runs <= MAX_RUNS:
        raise FixportError(f"--runs {runs} is out of range.", f"Use 1 to {MAX_RUNS} input sets.")
    tolerances = ToleranceTable(rtol=request.rtol, atol=request.atol)
    try:
        tolerances.validate()
    except ValueError as exc:
        raise FixportError(str(exc), "Give --rtol and --atol as non-negative numbers.") from exc
    try:
        check_precision(request.precision)
    except ValueError as exc:
        raise FixportError(str(exc), "Use --precision strict (the default) or --precision deployed.") from exc
    try:
        validate_latency_runs(request.latency_runs)
    except ValueError as exc:
        raise FixportError(str(exc), "Give --latency-runs a small count such as 5.") from exc
    refuse_missing_runtime(request.provider)
    if request.torch_device not in TORCH_DEVICES:
        raise FixportError(f"Unknown torch device {request.torch_device!r}.", "Use --torch-device cpu or cuda.")
    try:
        parse_optimize(request.optimize) if request.optimize else None
    except ValueError as exc:
        raise FixportError(str(exc), "Use for example --optimize ort,onnxscript.") from exc
    templates = dict(request.templates_by_instance)
    report(progress, 0.0, LOADING_STAGE)
    context = open_job(request.model, request.options, mappings)
    loaded = context.loaded
    check_cancelled(cancelled)
    if loaded.module is None:
        raise ModelLoadError(f"{loaded.path.name} is an ONNX file: there is no torch model to compare with.",
                             "Open the PyTorch model and pass the ONNX file with --onnx FILE.")
    export_options = context.export_options()
    generates = onnx_path is None and generation_components(loaded)  # a decoder: compared the way it generates too
    kept: list[OnnxModel] = []  # the compared export, for the generation check (not exported again)
    with context.exporter.fixes_applied(mappings, export_options) as custom_opsets:
        export_options.custom_opsets = {**custom_opsets, **export_options.custom_opsets}
        result = _compare_with_fixes(context, export_options, request, tolerances, templates, started, progress,
                                     cancelled, kept if generates else None)
    result.export_dtype = checkpoint_export_dtype(loaded)
    if generates:
        report(progress, 0.98, "checking greedy generation")
        try:
            result.generation = generation_with_other_component(
                request.model, request.options, mappings, loaded, context.export_options(), kept[0], cancelled,
                progress=within(progress, 0.98, "checking greedy generation"))
        finally:
            kept[0].release()
    return result


def _compare_with_fixes(context: JobContext, export_options: ExportOptions, request: CompareRequest,
                        tolerances: ToleranceTable, templates: dict[str, str], started: float,
                        progress: ProgressCallback | None, cancelled: CancelCallback | None,
                        kept: list[OnnxModel] | None = None) -> CompareResult:
    """Compare ``context``'s model with its export (``export_options``: the context's, with its
    fixes' custom opsets; the fixes registered by the caller) as ``request`` asks; the export is
    appended to ``kept`` (the caller releases it) instead of released, where ``kept`` is given."""
    loaded, exporter, mappings = context.loaded, context.exporter, context.mappings
    onnx_path, provider, runs, latency_runs = request.onnx_path, request.provider, request.runs, request.latency_runs
    precision, torch_device, given_shapes = request.precision, request.torch_device, request.other_shapes
    seconds: dict[str, float] = {}
    messages: list[str] = []
    report(progress, 0.1, "exporting" if onnx_path is None else "reading the ONNX file")
    done = Step.AUTO_FIXED if mappings or request.from_project else Step.CHECKED
    comparable = _model_to_compare(loaded, exporter, export_options, onnx_path, cancelled, done)
    check_cancelled(cancelled)
    messages += comparable.notes
    templates = {**templates_by_node(comparable.source_graph, mappings), **templates}
    plan = _runnable(plan_references(comparable.model, comparable.onnx_graph, comparable.custom_node_references))
    messages += plan.messages
    seconds["prepare"] = time.perf_counter() - started

    device, device_message = _torch_device(torch_device)
    messages += [device_message] if device_message else []
    session_info = _comparison_session(plan, provider, precision, loaded, exporter, onnx_path, comparable, done)
    messages += session_info.messages
    session = session_info.session
    tolerances = _tolerances_for(tolerances, precision, session_info.providers_used, messages,
                                 session_info.provider_options.get(INFERENCE_PRECISION, ""))
    check_cancelled(cancelled)

    run_started = time.perf_counter()
    read = integer_inputs_read(loaded.module, list(loaded.example_inputs), list(loaded.input_names)) \
        if runs > 2 else {}
    plain = input_sets(loaded.example_inputs, runs)
    # a set with wider values is compared as another size is: at the example's range where torch refuses it
    labelled: list[tuple[str, Any]] = [
        (label, inputs) if label == plain_label else
        (label, ShapeSet(label, inputs, ShapeSet(plain_label, plain_inputs), tuple(read.values())))
        for (label, inputs), (plain_label, plain_inputs) in zip(input_sets(loaded.example_inputs, runs, read), plain)]
    labelled += [(shape_set.label, shape_set) for shape_set in generalisation_shapes(loaded, export_options,
                                                                                      given_shapes)]
    messages += [SETS_ONLY_NOTE] if only_the_input_sets(loaded, export_options, given_shapes) else []
    values = check_input_values(loaded, export_options, comparable.model, comparable.onnx_graph,
                                comparable.source_graph, comparable.warnings)
    messages += values.notes
    labelled += [(other.label, ShapeSet(other.label, other.inputs)) for other in values.values_tried]
    per_run: list[list[OutputStats]] = []
    compared: list[tuple[str, tuple[torch.Tensor, ...]]] = []  # (label, inputs) of each run in per_run
    rounding_checks: list[RoundingCheck] = []
    runtime_failed: set[int] = set()  # runs (indices into per_run) ONNX Runtime could not run
    placement = None
    references: list[Reference] = []  # torch's outputs per input set, for the optimizer guard
    module, device = _module_on(loaded.module, loaded.example_inputs, device, messages)
    big = bool(getattr(comparable.model, "weights_on_disk", False))
    take_turns = turn_taker(big)
    try:
        with torch_tf32_off(device):
            for index, (label, inputs) in enumerate(labelled):
                report(progress, 0.2 + 0.4 * index / len(labelled),
                       f"comparing outputs, input set {index + 1}/{len(labelled)}")
                run = len(per_run)
                if isinstance(inputs, ShapeSet):  # another size: torch may refuse it, ONNX Runtime may fail there
                    shape_set = inputs
                    stats, note, inputs, failed, check = _compare_other_shape(module, session, loaded.input_names,
                                                                              shape_set, tolerances, run, device,
                                                                              take_turns)
                    messages.append(note)
                    rounding_checks += [check] if check is not None and check.failing else []
                    if shape_set.in_range is not None and inputs is shape_set.in_range.inputs:
                        label = shape_set.in_range.label  # what was compared: the values in the example's range
                    if failed:
                        runtime_failed.add(len(per_run))
                else:
                    try:
                        stats, check = compare_run(module, session, loaded.input_names, inputs, tolerances, run,
                                                    device, take_turns)
                    except _TorchRefused as refused:
                        if index == 0:  # the example inputs: the model's own error, as it is
                            raise refused.__cause__ from None
                        messages.append(f"Input set {index + 1} ({label}): the model's forward() refuses these "
                                        "random values, so it was not compared there; give inputs it takes with "
                                        "--inputs.")
                        continue
                    rounding_checks += [check] if check.failing else []
                    if check.runtime_failed:
                        runtime_failed.add(len(per_run))
                    elif request.optimize:
                        references.append(_reference(session, loaded.input_names, check))
                if stats:
                    per_run.append(stats)
                    compared.append((label, inputs))
                placement = collect_placement(session) if index == 0 else placement  # profiles the first run only
                check_cancelled(cancelled)
    finally:
        loaded.module.to("cpu")
    providers_used, provider_options = list(session_info.providers_used), dict(session_info.provider_options)
    report(progress, 0.62, f"timing {latency_runs} ONNX Runtime run(s)")
    cost = _cost(comparable.model, session, loaded, latency_runs, providers_used, messages)
    optimizers = None
    if request.optimize:
        variants = parse_optimize(request.optimize)
        report(progress, 0.63, f"checking {len(variants)} optimized variant(s)")
        optimizers = _guard(comparable.model, variants, references, tolerances, latency_runs, messages, cancelled)
    # The per-node analysis exports and opens its own model, and the half-precision check runs the
    # model in float32: at real size, keeping this model and its session as well would hold the
    # weights twice more.
    del session, session_info, plan
    if kept is None:
        comparable.model.release()
    else:  # a big model's weights wait on disk, its graph in memory
        kept.append(comparable.model)
    del comparable
    gc.collect()
    if rounding_checks:  # torch in float32 at each set whose half-precision outputs differ: seconds at real size
        report(progress, 0.64, f"judging {len(rounding_checks)} input set(s) against torch in float32")
    messages += _judge_rounding(loaded.module, rounding_checks, device)
    messages += [f"Input set {run + 1}: {stats.tied_order}" for run, run_stats in enumerate(per_run)
                 for stats in run_stats if stats.tied_order]
    outputs = [worst_of_runs(column) for column in zip(*per_run)]
    seconds["outputs"] = time.perf_counter() - run_started

    analysis = None
    internal_errors: list[InternalError] = []
    if request.analyze_nodes and onnx_path is None:
        report(progress, 0.65, "comparing node by node")
        node_started = time.perf_counter()
        failing = [run for run, stats in enumerate(per_run) if not all(s.passed for s in stats)]
        # a set ONNX Runtime could not run has no values to follow node by node (the trace's own
        # graph fails there too, where it baked a count); its error names the node
        ran = [run for run in failing if run not in runtime_failed]
        run = ran[0] if ran else 0 if not failing else -1
        if not failing and big:
            messages.append(MATCHED_AT_SIZE_NOTE)
            analysis = None
        elif run < 0:
            messages.append(RUNTIME_FAILED_NOTE.format(sets=", ".join(str(r + 1) for r in failing)))
            analysis = None
        else:
            analysis = _analyze_nodes(loaded, exporter, export_options, compared[run][1], run, provider, precision,
                                      tolerances, templates, messages, internal_errors, cancelled)
        if analysis is not None and analysis.first_divergent is None and run >= runs:
            at_other_values = compared[run][0] in {other.label for other in values.values_tried}
            messages.append(VALUES_BAKED_WHILE_TRACING_NOTE if at_other_values else BAKED_WHILE_TRACING_NOTE)
        if analysis is not None and device == "cuda" and CUDA_PROVIDER not in providers_used:
            messages.append(PER_NODE_DEVICES_NOTE.format(providers=", ".join(providers_used)))
        seconds["nodes"] = time.perf_counter() - node_started
    elif request.analyze_nodes:
        messages.append("Per-node analysis needs an export with provenance; skipped for an ONNX file.")
    seconds["total"] = time.perf_counter() - started
    report(progress, 1.0, "done")
    return CompareResult(
        model_path=str(loaded.path),
        onnx_source=onnx_path or f"export (opset {export_options.opset})",
        provider_requested=provider, providers_used=providers_used, runs=len(per_run),
        outputs=outputs, per_run=[[_without_plot_data(s) for s in stats] for stats in per_run],
        run_labels=[label for label, _ in compared],
        node_analysis=analysis, messages=messages, tolerances=tolerances.effective(), seconds=seconds,
        precision=precision, provider_options=provider_options, torch_device=device,
        tolerance_name=tolerances.name, tolerance_reason=tolerances.reason, placement=placement,
        baked_inputs=[problem.message for problem in values.problems], cost=cost, internal_errors=internal_errors,
        optimizers=optimizers)


def _reference(session: Any, input_names: list[str], check: RoundingCheck) -> Reference:
    """One compared input set as the optimizer guard holds variants to it (torch's outputs, as numpy)."""
    feeds = feeds_for(session, input_names, [to_numpy(t) for t in check.inputs])
    return Reference(check.run, feeds, [(name, to_numpy(value)) for name, value in check.expected])


def _guard(model: OnnxModel, variants: list[Any], references: list[Reference], tolerances: ToleranceTable,
           latency_runs: int, messages: list[str], cancelled: CancelCallback | None) -> OptimizerReport:
    """The optimizer guard on the compared export (weights read into memory: the optimizers need them)."""
    proto = model.proto
    if model.weights_on_disk:
        proto = onnx.ModelProto()
        proto.CopyFrom(model.proto)
        onnx.external_data_helper.load_external_data_for_model(proto, str(model.base_dir))
    result = guard_optimizers(proto, variants, references, tolerances, latency_runs, None, cancelled)
    messages += result.notes
    return result


def _cost(model: OnnxModel, session: Any, loaded: LoadedModel, runs: int, providers: list[str],
          messages: list[str]) -> RuntimeCost:
    """The compared export's size, node count and median latency on the example inputs (the same
    session the outputs ran in, so each export is timed on the provider it was compared on)."""
    try:
        feeds = feeds_for(session, loaded.input_names, [to_numpy(t) for t in loaded.example_inputs])
        return runtime_cost(model, session, feeds, runs, providers, warm=True)  # input set 1 ran these feeds
    except Exception as exc:  # ORT's own exception types: the comparison stands without a timing
        messages.append(f"Latency not measured: {_first_line(exc)}")
        return runtime_cost(model, None, {}, 0, providers)


def templates_by_node(source_graph: Graph, mappings: list[FixMapping]) -> dict[str, str]:
    """Node id -> id of the template that converts that node, for every mapped node (the one
    :func:`~fixport.core.project.project.mapping_for` picks: a per-node fix over a per-kind one)."""
    templates: dict[str, str] = {}
    for node in source_graph.nodes:
        mapping = mapping_for_node(mappings, node)
        if mapping is not None:
            templates[node.id] = mapping.template_id
    return templates


def _model_to_compare(loaded: LoadedModel, exporter: Exporter, options: Any, onnx_path: str | None,
                      cancelled: CancelCallback | None, done: Step) -> ComparableExport:
    """The ONNX model to compare: a fresh export (with provenance and the torch side's capture) or a file.
    An export that does not convert yet says what to do about its problems' kinds, after ``done``."""
    if onnx_path is None:
        try:
            return exporter.export_for_comparison(loaded, options, cancelled)
        except NothingToCompareError as exc:
            name, exporter_name = loaded.path.name, exporter.profile.name
            advice = advice_for(exc.problems[0], exporter_name, name, done) if exc.problems \
                else advice_without_a_list(name, exporter_name, done)
            raise NothingToCompareError(exc.message, sentence(advice), exc.details, exc.problems) from exc
    model = read_model_file(onnx_path, "--onnx file")  # external data stays in its file
    refuse_mismatched_inputs(model, loaded, Path(onnx_path).name)
    return ComparableExport(beside_file(model, Path(onnx_path)), onnx_to_graph(model), Graph("onnx"), None,
                            list(loaded.input_names))


def refuse_mismatched_inputs(model: onnx.ModelProto, loaded: LoadedModel, file_name: str) -> None:
    """A ModelLoadError naming the inputs whose count or shape differ from the model's example inputs
    (ONNX Runtime's own message names neither file nor fix)."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    graph_inputs = [value for value in model.graph.input if value.name not in initializers]
    expected = [(name, tuple(tensor.shape)) for name, tensor in zip(loaded.input_names, loaded.example_inputs)]
    problems = []
    if len(graph_inputs) != len(expected):
        problems.append(f"it has {len(graph_inputs)} input(s) ({', '.join(v.name for v in graph_inputs)}), "
                        f"the model {len(expected)} ({', '.join(name for name, _ in expected)})")
    for value, (name, shape) in zip(graph_inputs, expected):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
        if len(dims) != len(shape) or any(d is not None and d != s for d, s in zip(dims, shape)):
            problems.append(f"its input {value.name!r} is {_shape_text(dims)}, the model's {name!r} is "
                            f"{_shape_text(shape)}")
    if problems:
        raise ModelLoadError(f"The --onnx file {file_name} does not fit the model's inputs: {'; '.join(problems)}.",
                             "Pass the ONNX file exported from this model with the same input shapes (--input), "
                             "or leave out --onnx to export the model now.")


def _shape_text(dims: Sequence[int | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) or "a scalar"


def _runnable(plan: ReferencePlan) -> ReferencePlan:
    if plan.missing:
        raise ExportError("The ONNX model has nodes ONNX Runtime cannot run, and no reference could be built: "
                          + "; ".join(plan.missing),
                          "Fix these nodes first (python main.py check MODEL lists them).")
    return plan


def _torch_device(requested: str) -> tuple[str, str]:
    """Where the torch reference runs, and a message when CUDA was asked of a torch without it."""
    if requested != "cuda":
        return "cpu", ""
    if not torch.cuda.is_available():
        return "cpu", ("--torch-device cuda: this torch sees no CUDA device (torch.cuda.is_available() is False); "
                       "the torch reference ran on CPU.")
    return "cuda", ("The torch reference ran on cuda with TF32 off (torch.backends.cuda.matmul.allow_tf32 and "
                    "torch.backends.cudnn.allow_tf32 False): full float32, as on CPU.")


class _TorchRefused(Exception):
    """The model's forward() raised on an input set (random ids or sizes it may refuse)."""


def _first_line(exc: BaseException) -> str:
    """``TypeName: the first line of the message`` (at most 300 characters of it)."""
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"


def _module_on(module: torch.nn.Module, example_inputs: Sequence[torch.Tensor], device: str,
               messages: list[str]) -> tuple[torch.nn.Module, str]:
    """The module on ``device`` and the device, or on CPU where its forward() cannot run on CUDA
    (a model that calls .numpy() in forward, say): the reference then comes from CPU, said in ``messages``."""
    module = module.to(device)
    if device != "cuda":
        return module, device
    try:
        with torch.no_grad(), torch_tf32_off(device):
            module(*[t.to(device) for t in example_inputs])
    except Exception as exc:  # the user's forward on CUDA: any error means the CPU reference
        messages.append(f"The model's forward() fails on cuda ({_first_line(exc)}); the torch reference ran on CPU "
                        "instead.")
        return module.to("cpu"), "cpu"
    return module, device


@contextmanager
def torch_tf32_off(device: str) -> Iterator[None]:
    """Torch's own TF32 switches off on CUDA while the reference runs (cuDNN's is on by default): the
    reference stays full float32 in both precision modes; restored afterwards."""
    if device != "cuda":
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _tolerances_for(tolerances: ToleranceTable, precision: str, providers_used: list[str],
                    messages: list[str], inference_precision: str = "") -> ToleranceTable:
    """The TF32 rows for a deployed comparison that really runs on CUDA, bfloat16's for one OpenVINO
    computes in bfloat16; the table as it is otherwise."""
    if precision != DEPLOYED:
        return tolerances
    if OPENVINO_NAME in providers_used:
        return openvino_tolerances(tolerances, inference_precision, messages)
    if CUDA_PROVIDER not in providers_used:
        messages.append("Precision 'deployed' changes nothing on CPU (the CPU provider has no TF32): "
                        "the default tolerances apply.")
        return tolerances
    return tolerances.for_tf32()


@dataclass
class RoundingCheck:
    """One input set's failing outputs, to be held to the model run in float32 (low_precision.py)
    once the ONNX session is gone."""

    run: int
    inputs: tuple[torch.Tensor, ...]
    expected: list[tuple[str, np.ndarray]]
    actual: list[Any]
    failing: list[OutputStats]
    runtime_failed: bool = False  # ONNX Runtime raised on these inputs: every output failed, with its message


def compare_run(module: torch.nn.Module, session: Any, input_names: list[str], inputs: tuple[torch.Tensor, ...],
                 tolerances: ToleranceTable, run: int, device: str,
                 take_turns: Callable[[], object] = no_turns) -> tuple[list[OutputStats], RoundingCheck]:
    """One input set's outputs, and what is left to check for half precision's own rounding; ``take_turns``
    after torch's run and after ONNX Runtime's (resident_weights.turn_taker)."""
    on_device = [t.to(device) for t in inputs]
    try:
        with torch.no_grad():
            expected = flatten_outputs(module(*on_device))
    except Exception as exc:  # the user's forward on these values
        raise _TorchRefused() from exc
    take_turns()
    try:
        actual = session.run(None, feeds_for(session, input_names, [to_numpy(t) for t in inputs]), quiet_run())
        take_turns()
    except Exception as exc:  # ORT's own exception types: these values fail, as a failing set, not a crash
        why = f"{RUNTIME_FAILS_ON_SET.format(run=run + 1)}: {first_line(exc)}"
        stats = [missing_output(name, value, *tolerances.for_dtype(str(value.dtype)), run, why)
                 for name, value in expected]
        return stats, RoundingCheck(run, inputs, expected, [], [], runtime_failed=True)
    stats = compare_output_lists(expected, actual, tolerances, run)
    failing = [s for s in stats if not s.passed and s.dtype in LOW_PRECISION_NAMES]
    return stats, RoundingCheck(run, inputs, expected, list(actual), failing)


def _judge_rounding(module: torch.nn.Module, checks: list[RoundingCheck], device: str) -> list[str]:
    """Pass the half-precision outputs whose difference is that precision's own rounding; one note for all."""
    found: list[Rounding] = []
    sets: list[int] = []
    if not checks:
        return []
    try:
        module.to(device)
        for check in checks:
            on_device = [t.to(device) for t in check.inputs]
            rounding = rounding_only(module, on_device, check.expected, check.actual, check.failing)
            for output in check.failing:
                output.passed = output.passed or output.name in rounding
            found += rounding.values()
            sets += [check.run + 1] if rounding else []
    finally:
        module.to("cpu")
    where = f"at input set{'s' if len(sets) > 1 else ''} {', '.join(map(str, sets))}"
    return [rounding_note(found, where)] if found else []


def _compare_other_shape(module: torch.nn.Module, session: Any, input_names: list[str], shape_set: ShapeSet,
                         tolerances: ToleranceTable, run: int, device: str,
                         take_turns: Callable[[], object] = no_turns
                         ) -> tuple[list[OutputStats], str, tuple[torch.Tensor, ...], bool, RoundingCheck | None]:
    """One input set at other sizes of the declared dynamic dims, a note saying what it was, the
    inputs compared (its in-range twin's where torch refuses its wider values), whether ONNX
    Runtime failed there, and its low-precision outputs to hold to the float32 run as at the
    example inputs."""
    named = shape_set.label if shape_set.label.startswith("set ") else f"set {shape_set.label}"  # build()'s "set 2"
    where = f"Input {named} (inputs {shape_set.shapes})"
    try:
        with torch.no_grad():
            expected = flatten_outputs(module(*[t.to(device) for t in shape_set.inputs]))
    except Exception as exc:  # the model itself does not run there: nothing to hold the export to
        if shape_set.in_range is not None:  # it refuses the wider values: the same sizes, values in range
            stats, note, inputs, failed, check = _compare_other_shape(module, session, input_names,
                                                                      shape_set.in_range, tolerances, run, device,
                                                                      take_turns)
            return stats, f"{in_range_note(shape_set, exc)} {note}", inputs, failed, check
        return [], (f"{where}: skipped, torch itself fails there ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0]})."), shape_set.inputs, False, None
    take_turns()
    try:
        actual = session.run(None, feeds_for(session, input_names, [to_numpy(t) for t in shape_set.inputs]),
                             quiet_run())
        take_turns()
    except Exception as exc:  # ORT's own exception types
        why = f"ONNX Runtime fails at {shape_set.label}: {ort_error_summary(str(exc))[:300] or first_line(exc)}"
        return [missing_output(name, value, *tolerances.for_dtype(str(value.dtype)), run, why)
                for name, value in expected], f"{where}: ONNX Runtime fails there.", shape_set.inputs, True, None
    stats = compare_output_lists(expected, actual, tolerances, run)
    failing = [s for s in stats if not s.passed and s.dtype in LOW_PRECISION_NAMES]
    return (stats, f"{where}.", shape_set.inputs, False,
            RoundingCheck(run, shape_set.inputs, expected, list(actual), failing))


def _without_plot_data(stats: OutputStats) -> OutputStats:
    from fixport.core.statistics.output_stats import ErrorHistogram, ValuePairs

    return replace(stats, histogram=ErrorHistogram(), scatter=ValuePairs())


def _comparison_session(plan: ReferencePlan, provider: str, precision: str, loaded: LoadedModel,
                        exporter: Exporter, onnx_path: str | None, comparable: ComparableExport,
                        done: Step) -> SessionInfo:
    """The session the outputs are compared in; a model ONNX Runtime refuses is named as the user's
    problem: the node it refuses, and what to do about that node's kind (never the fix just applied)."""
    try:
        return plan.create_session(provider=provider, precision=precision, profile=True)
    except FixportError:
        raise
    except Exception as exc:  # ONNX Runtime's (or OpenVINO's) own exception types
        in_openvino = provider == OPENVINO
        runtime = RUNTIME_TITLES[OPENVINO if in_openvino else ORT]
        reason = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else type(exc).__name__
        reason = openvino_error_summary(str(exc)) if in_openvino else reason
        if onnx_path is not None:
            raise ExportError(f"{runtime} cannot load {Path(onnx_path).name}: {reason}",
                              "Check that the file is the one exported from this model, with its weights file "
                              "beside it, or compare the export Fixport makes (leave out --onnx).") from exc
        name = loaded.path.name
        problem_of = openvino_error_problem if in_openvino else runtime_error_problem
        refused = problem_of(str(exc), comparable.onnx_graph, comparable.source_graph, mark=False)
        where = f" ({refused.display_kind} at {refused.source})" if refused.source else ""
        advice = advice_for(refused, exporter.profile.name, name, done)
        raise ExportError(f"The export of {name} does not load in {runtime}, so there is nothing to compare: "
                          f"{reason}{where}",
                          sentence(advice),
                          window_hint="Fix all, or pick the node Problems lists and a fix for it, then Compare "
                                      "again.") from exc


def _analyze_nodes(loaded: LoadedModel, exporter: Exporter, export_options: Any, inputs: tuple[torch.Tensor, ...],
                   run: int, provider: str, precision: str, tolerances: ToleranceTable, templates: dict[str, str],
                   messages: list[str], internal_errors: list[InternalError],
                   cancelled: CancelCallback | None) -> NodeAnalysis | None:
    """Diagnosing export (no constant folding, so fused nodes are compared one by one), both
    sides captured, compared node by node; where Fixport's own code fails there, an internal error
    (a bug to report, not a note), and the outputs stand without it."""
    check_cancelled(cancelled)
    try:
        comparable = exporter.export_for_comparison(loaded, replace(export_options, do_constant_folding=False),
                                                    cancelled)
    except FixportError as exc:
        messages.append(f"Per-node analysis skipped: the diagnosing export failed: {exc}")
        return None
    if comparable.capture is None:
        messages.append("Per-node analysis skipped: " + " ".join(comparable.notes))
        return None
    plan = plan_references(comparable.model, comparable.onnx_graph, comparable.custom_node_references)
    if plan.missing:
        messages.append("Per-node analysis skipped: " + "; ".join(plan.missing))
        return None
    messages.append(exporter.per_node_note)

    used: list[str] = []
    runs_on = [provider]

    def session_factory(model: OnnxModel) -> Any:
        check_cancelled(cancelled)  # called once per measured node: the per-node analysis's cancel point
        # Run once: at real size, ONNX Runtime folding the unoptimised export's Transposes of weights
        # would hold a second copy of them.
        info = plan.create_session(model, runs_on[0], precision=precision, fold_constants=not model.weights_on_disk)
        used[:] = info.providers_used
        return info.session

    def analyze() -> NodeAnalysis:
        # The capture re-runs where the exporter traced it, on CPU: its constants and parameters live there.
        return analyze_nodes(plan.model, comparable.onnx_graph, comparable.source_graph, comparable.capture,
                             inputs, comparable.input_names, session_factory, tolerances, templates, run, "cpu")

    try:
        try:
            analysis = analyze()
        except Cancelled:
            raise
        except Exception as exc:
            if provider != "cuda":
                raise
            # The outputs were compared on CUDA; where capturing every value fails there, capture on CPU.
            messages.append(f"Per-node analysis on CUDA failed ({_first_line(exc)}); it ran on CPU instead.")
            runs_on[0] = "cpu"
            analysis = analyze()
    except Cancelled:
        raise
    except Exception as exc:  # keep the outputs: ORT or the torch interpreter on an unusual graph, or our bug
        if raised_in_fixport(exc):
            internal_errors.append(internal_error("per-node analysis", exc))
        else:
            messages.append(f"Per-node analysis failed where ONNX Runtime or torch ran: {_first_line(exc)}")
        return None
    if CUDA_PROVIDER in used:
        messages.append(PER_NODE_DEVICES_NOTE.format(providers=", ".join(used)))
    messages += analysis.messages
    return analysis
