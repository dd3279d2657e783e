"""The analyze job: open a model, export it with diagnosis and the project's fixes, save it."""
from __future__ import annotations

import time

from fixport.core.analysis.job_context import JobContext, open_job
from fixport.core.checkpoints.checkpoint_export import save_checkpoint_component
from fixport.core.checkpoints.export_dtype import checkpoint_export_dtype
from fixport.core.checkpoints.generation_check import (
    generation_components,
    generation_problem,
    generation_with_other_component,
)
from fixport.core.checks.output_check import mismatched_outputs
from fixport.core.checks.runtime_outputs import OPENVINO_CHECK_NOTE, openvino_outputs, openvino_refusal
from fixport.core.checks.shape_check import check_other_shapes, shape_label_note
from fixport.core.checks.value_check import check_input_values
from fixport.core.exporters.base import ExportResult
from fixport.core.exporters.size_shortcuts import with_shortcut_changes
from fixport.core.exporters.traced_size_changes import with_size_changes
from fixport.core.foundation.comparison import to_numpy
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.diagnosis import nodes_without_runtime_kernel
from fixport.core.onnx_io.onnx_files import save_model
from fixport.core.onnx_io.runtime_cost import session_cost
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.proposed_shapes import proposal_notes, proposed_shapes
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import AnalysisResult
from fixport.core.words.cancel import (
    CancelCallback,
    ProgressCallback,
    check_cancelled,
    report,
    within,
)
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.runtimes import OPENVINO, ORT
from fixport.core.words.vocabulary import LOADING_STAGE, ProblemReason


def analyze(request: AnalyzeRequest, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> AnalysisResult:
    """Open, trace and export with diagnosis and the project's fixes applied, compare a clean
    export's outputs with torch's; save to ``request.output`` when nothing is left unsupported."""
    started = time.perf_counter()
    report(progress, 0.0, LOADING_STAGE)
    context = open_job(request.model, request.options, request.mappings)
    check_cancelled(cancelled)
    return analyze_in(context, request, progress, cancelled, load_seconds=time.perf_counter() - started)


def analyze_in(context: JobContext, request: AnalyzeRequest, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None, load_seconds: float = 0.0) -> AnalysisResult:
    """:func:`analyze` in a job that holds its context: the model as loaded, the options as
    resolved, the exporter and the fixes are ``context``'s (``request`` names the same model,
    options and fixes, and says what to check and where to save)."""
    loaded, export_options, exporter = context.loaded, context.export_options(), context.exporter
    if loaded.module is None:
        return _analyze_onnx_file(loaded, export_options, {"load": load_seconds}, request.runtime)
    export_started = time.perf_counter()
    with exporter.fixes_applied(list(context.mappings), export_options) as custom_opsets:
        export_options.custom_opsets = {**custom_opsets, **export_options.custom_opsets}
        result = exporter.export(loaded, export_options, run_check=request.run_check, progress=progress,
                                 cancelled=cancelled)
    try:
        return _checked_and_saved(request, loaded, export_options, result, progress, cancelled,
                                  {"load": load_seconds, "export": time.perf_counter() - export_started})
    finally:
        result.model.release()  # its weights on disk now, not when a finalizer runs (a forked trial has none)


def _checked_and_saved(request: AnalyzeRequest, loaded: LoadedModel, export_options: ExportOptions,
                       result: ExportResult, progress: ProgressCallback | None, cancelled: CancelCallback | None,
                       seconds: dict[str, float]) -> AnalysisResult:
    """A clean export's outputs (and other sizes) against torch's, then saved to ``request.output``."""
    exported_at = time.perf_counter()
    check_cancelled(cancelled)
    max_abs, other_sizes = None, []
    proposal_used = (loaded.settings.get("export_options", {}).get("dynamic_axes") is loaded.proposed_dynamic_axes
                     and (request.options or {}).get("dynamic_axes") is None)
    notes = [*loaded.notes, *proposal_notes(loaded.proposed_dynamic_axes, export_options.dynamic_axes,
                                            1 + len(loaded.other_input_sets), proposal_used)]
    runtime_outputs, refused = result.runtime_outputs, None
    if request.run_check and result.ok and request.runtime == OPENVINO:  # the numbers as OpenVINO computes them
        runtime_outputs, refused = openvino_outputs(loaded, result.model, result.onnx_graph, result.source_graph)
        notes.append(OPENVINO_CHECK_NOTE)
        result.unsupported += [refused] if refused is not None else []
    if request.run_check and result.ok:  # it runs: do the numbers match torch's?
        report(progress, 0.9, "comparing ONNX Runtime with torch")
        mismatches, max_abs, rounding_notes = mismatched_outputs(loaded, result.model, result.onnx_graph,
                                                                 result.source_graph, runtime_outputs)
        notes += rounding_notes
        result.unsupported += mismatches
        if not mismatches:  # inputs it dropped, or whose values the trace baked: right at other values?
            values = check_input_values(loaded, export_options, result.model, result.onnx_graph,
                                        result.source_graph, result.warnings, every_input=result.check_every_input)
            result.unsupported += values.problems
            notes += values.notes
        other_sets = export_options.dynamic_axes or request.other_shapes or (request.at_input_sets
                                                                             and loaded.other_input_sets)
        if not mismatches and other_sets:  # and at build()'s other input sets, and other sizes?
            report(progress, 0.95, "checking other sizes")
            shapes = check_other_shapes(loaded, export_options, result.model, result.onnx_graph,
                                        result.source_graph, result.warnings, request.other_shapes,
                                        request.at_input_sets, result.sizes_refused,
                                        progress=within(progress, 0.95, "checking other sizes"))
            result.warnings += _size_guards_asked_for(result, shapes.problems)
            # sizes the trace folded at a line it warned about: the change that keeps them, for fix --auto
            # and sizes torch.export pinned at a line taking a shortcut: the change that captures the general path
            result.unsupported += with_shortcut_changes(
                loaded, with_size_changes(loaded, shapes.problems, result.warnings), result.warnings)
            notes += shape_label_note(shapes)
            other_sizes = shapes.shapes_tried
    generation = None
    if request.run_check and result.ok and request.generation_check and generation_components(loaded):
        report(progress, 0.97, "checking greedy generation")
        generation = generation_with_other_component(request.model, request.options, list(request.mappings), loaded,
                                                     export_options, result.model, cancelled,
                                                     request.output or request.kept_in,
                                                     progress=within(progress, 0.97, "checking greedy generation"))
        if not request.output:  # kept for this check only: the pair is this check's exports
            generation.written = ""
        if not generation.passed and not generation.note:
            result.unsupported.append(generation_problem(generation))
    compared_at = time.perf_counter()
    output = request.output
    saved: list[str] = []
    if output and result.ok:
        saved = (save_checkpoint_component(loaded, result.model, export_options, output) if loaded.checkpoint
                 else [str(p) for p in save_model(result.model, output)])
    elif request.kept_in and result.ok and loaded.checkpoint and generation is None:
        # a component that ran the generation check itself is no later one's other half
        report(progress, 0.98, "keeping the export for the next component's generation check")
        # this command's own temporary copy: the export's weights file linked, not written again
        save_checkpoint_component(loaded, result.model, export_options, request.kept_in, link_weights=True)
    analysis = _analysis_from(loaded, export_options, result, saved, max_abs, notes, {
        **seconds, "compare": compared_at - exported_at, "save": time.perf_counter() - compared_at})
    analysis.other_sizes_checked = other_sizes
    analysis.proposed_dynamic_shapes = proposed_shapes(loaded.proposed_dynamic_axes)
    if request.latency_runs and result.model.proto.graph.node:
        report(progress, 0.97, f"timing {request.latency_runs} ONNX Runtime run(s)")
        analysis.cost = session_cost(result.model, list(loaded.input_names),
                                     [to_numpy(t) for t in loaded.example_inputs], request.latency_runs)
    analysis.generation = generation
    analysis.runtime = request.runtime
    return analysis


def _size_guards_asked_for(result: ExportResult, shape_problems: list[UnsupportedNode]) -> list[str]:
    """The lines where a capture that looked general pinned sizes, once the other-size check found the
    export specialised: the shortcut change needs them."""
    on_demand = result.size_guards_on_demand
    if on_demand is None or not any(p.reason == ProblemReason.SHAPE_SPECIALISED for p in shape_problems):
        return []
    return [line for line in on_demand() if line not in result.warnings]


def _analysis_from(loaded: LoadedModel, options: ExportOptions, result: ExportResult,
                   saved: list[str], max_abs: float | None, notes: list[str],
                   seconds: dict[str, float]) -> AnalysisResult:
    if result.source_graph is not None:
        result.source_graph.label_inputs(list(loaded.input_names))
        result.source_graph.label_outputs(list(result.onnx_graph.outputs))
    checkpoint = loaded.checkpoint
    return AnalysisResult(
        model_path=str(loaded.path), source_kind=loaded.source_kind, options=options,
        source_graph=result.source_graph, onnx_graph=result.onnx_graph,
        unsupported=result.unsupported, input_names=list(loaded.input_names),
        input_shapes=[tuple(t.shape) for t in loaded.example_inputs], warnings=result.warnings,
        notes=notes, seconds=seconds, saved_files=saved, output_max_abs=max_abs,
        task=checkpoint.task if checkpoint else "", component=checkpoint.component if checkpoint else "",
        components=list(checkpoint.components) if checkpoint else [], graph_rewrites=list(result.graph_rewrites),
        export_dtype=checkpoint_export_dtype(loaded))


def _analyze_onnx_file(loaded: LoadedModel, options: ExportOptions, seconds: dict[str, float],
                       runtime: str = ORT) -> AnalysisResult:
    import onnx

    from fixport.core.onnx_io.onnx_graph import onnx_to_graph

    model = onnx.load(str(loaded.path), load_external_data=False)
    graph = onnx_to_graph(model)
    local_functions = {(f.domain, f.name) for f in model.functions}
    problems = nodes_without_runtime_kernel(graph, local_functions, None)
    refused = openvino_refusal(str(loaded.path), graph) if runtime == OPENVINO else None
    problems += [refused] if refused is not None else []
    opsets = {o.domain or "onnx": o.version for o in model.opset_import}
    options.opset = opsets.get("onnx", options.opset)
    return AnalysisResult(str(loaded.path), "onnx", options, None, graph, problems,
                          list(graph.inputs), [], notes=list(loaded.notes), seconds=seconds, runtime=runtime)


