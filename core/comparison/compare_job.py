"""The `compare` job: torch vs ONNX Runtime on several input sets, then node by node.

Run 0 uses the example inputs, run k a fresh random input set (seed k) shaped like them: some
export bugs (a value computed outside the tracer and baked in as a constant) only show on a
second input. When an output fails (or always, on run 0, for the plots), a diagnosing export
without constant folding is compared node by node to find where the outputs start to diverge.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import onnx
import torch

from fixport.core.comparison.custom_op_reference import ReferencePlan, plan_references
from fixport.core.comparison.intermediates import (
    NodeAnalysis,
    TorchCaptureError,
    TorchGraphRecorder,
    analyze_nodes,
)
from fixport.core.exporters.applied_fixes import applied_mappings
from fixport.core.exporters.torchscript import TorchScriptExporter
from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import (
    CancelCallback,
    ProgressCallback,
    check_cancelled,
    report,
)
from fixport.core.model.compare_result import MAX_RUNS, CompareResult
from fixport.core.model.errors import ExportError, FixportError, ModelLoadError
from fixport.core.model.export_options import resolve_export_options
from fixport.core.model.graph import Graph
from fixport.core.model.output_stats import (
    OutputStats,
    compare_arrays,
    flatten_outputs,
    missing_output,
    to_numpy,
    worst_of_runs,
)
from fixport.core.model.project import FixMapping
from fixport.core.model.tolerances import ToleranceTable
from fixport.core.onnx_io.onnx_graph import onnx_to_graph
from fixport.core.onnx_io.ort_session import cuda_available, feeds_for

if TYPE_CHECKING:
    from fixport.core.model.results import ModelRequest

DIAGNOSING_EXPORT_NOTE = ("Per-node analysis re-exported the model without constant folding, so fused "
                          "nodes (Conv+BatchNorm) are compared one by one against their own torch ops.")


def input_sets(example_inputs: Sequence[torch.Tensor], runs: int) -> list[tuple[torch.Tensor, ...]]:
    """Run 0: the example inputs; run k: random tensors like them (seed k), ints in the same range."""
    sets = [tuple(example_inputs)]
    for seed in range(1, runs):
        generator = torch.Generator().manual_seed(seed)
        sets.append(tuple(_random_like(t, generator) for t in example_inputs))
    return sets


def _random_like(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return torch.randn(tensor.shape, generator=generator, dtype=tensor.dtype)
    if tensor.dtype == torch.bool:
        return torch.rand(tensor.shape, generator=generator) < 0.5
    if tensor.numel() == 0:
        return tensor.clone()
    low, high = int(tensor.min()), int(tensor.max())
    return torch.randint(low, high + 1, tensor.shape, generator=generator, dtype=tensor.dtype)


def compare(request: ModelRequest, options: dict[str, Any] | None = None, onnx_path: str | None = None,
            provider: str = "cpu", runs: int = 1, rtol: float | None = None, atol: float | None = None,
            mappings: list[FixMapping] | None = None, templates_by_instance: dict[str, str] | None = None,
            analyze_nodes_enabled: bool = True, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None) -> CompareResult:
    """Compare torch and ONNX Runtime outputs of one model; see the module docstring."""
    started = time.perf_counter()
    if not 1 <= runs <= MAX_RUNS:
        raise FixportError(f"--runs {runs} is out of range.", f"Use 1 to {MAX_RUNS} input sets.")
    tolerances = ToleranceTable(rtol=rtol, atol=atol)
    try:
        tolerances.validate()
    except ValueError as exc:
        raise FixportError(str(exc), "Give --rtol and --atol as non-negative numbers.") from exc
    templates = dict(templates_by_instance or {})
    report(progress, 0.0, "loading the model")
    loaded = open_model(request)
    if loaded.module is None:
        raise ModelLoadError(f"{loaded.path.name} is an ONNX file: there is no torch model to compare with.",
                             "Open the PyTorch model and pass the ONNX file with --onnx FILE.")
    export_options = resolve_export_options(loaded.settings, options)
    with applied_mappings(list(mappings or []), export_options.opset) as custom_opsets:
        export_options.custom_opsets = {**custom_opsets, **export_options.custom_opsets}
        return _compare_with_fixes(loaded, export_options, onnx_path, provider, runs, tolerances, templates,
                                   list(mappings or []), analyze_nodes_enabled, started, progress, cancelled)


def _compare_with_fixes(loaded: LoadedModel, export_options: Any, onnx_path: str | None, provider: str,
                        runs: int, tolerances: ToleranceTable, templates: dict[str, str],
                        mappings: list[FixMapping], analyze_nodes_enabled: bool, started: float,
                        progress: ProgressCallback | None, cancelled: CancelCallback | None) -> CompareResult:
    seconds: dict[str, float] = {}
    messages: list[str] = []
    report(progress, 0.1, "exporting" if onnx_path is None else "reading the ONNX file")
    model, onnx_graph, torchscript_graph, recorder = _model_to_compare(loaded, export_options, onnx_path)
    if torchscript_graph is not None:
        templates = {**templates_by_node(torchscript_graph, mappings), **templates}
    capture = _build_capture(recorder, messages) if recorder is not None else None
    plan = _runnable(plan_references(model, onnx_graph, capture))
    messages += plan.messages
    seconds["prepare"] = time.perf_counter() - started

    device, device_message = _torch_device(provider)
    messages += [device_message] if device_message else []
    session_info = plan.create_session(provider=provider)
    messages += session_info.messages
    session = session_info.session
    check_cancelled(cancelled)

    run_started = time.perf_counter()
    sets = input_sets(loaded.example_inputs, runs)
    per_run: list[list[OutputStats]] = []
    module = loaded.module.to(device)
    try:
        for run, inputs in enumerate(sets):
            report(progress, 0.2 + 0.4 * run / len(sets), f"comparing outputs, input set {run + 1}/{len(sets)}")
            per_run.append(_compare_run(module, session, loaded.input_names, inputs, tolerances, run, device))
            check_cancelled(cancelled)
    finally:
        loaded.module.to("cpu")
    outputs = [worst_of_runs(column) for column in zip(*per_run)]
    seconds["outputs"] = time.perf_counter() - run_started

    analysis = None
    if analyze_nodes_enabled and onnx_path is None:
        report(progress, 0.65, "comparing node by node")
        node_started = time.perf_counter()
        failing = [run for run, stats in enumerate(per_run) if not all(s.passed for s in stats)]
        run = failing[0] if failing else 0
        analysis = _analyze_nodes(loaded, export_options, sets[run], run, provider, device, tolerances,
                                  templates, messages)
        seconds["nodes"] = time.perf_counter() - node_started
    elif analyze_nodes_enabled:
        messages.append("Per-node analysis needs an export with provenance; skipped for an ONNX file.")
    seconds["total"] = time.perf_counter() - started
    report(progress, 1.0, "done")
    return CompareResult(
        model_path=str(loaded.path),
        onnx_source=onnx_path or f"export (opset {export_options.opset})",
        provider_requested=provider, providers_used=list(session_info.providers_used), runs=runs,
        outputs=outputs, per_run=[[_without_plot_data(s) for s in stats] for stats in per_run],
        node_analysis=analysis, messages=messages, tolerances=tolerances.effective(), seconds=seconds)


def templates_by_node(torchscript_graph: Graph, mappings: list[FixMapping]) -> dict[str, str]:
    """Instance key -> id of the template that converts that node, for every mapped node."""
    templates: dict[str, str] = {}
    for node in torchscript_graph.nodes:
        for mapping in mappings:
            same_function = mapping.python_op_name in (None, node.attributes.get("name"))
            if mapping.instance == node.id or (mapping.instance is None and mapping.target_kind == node.kind
                                               and same_function):
                templates[node.id] = mapping.template_id
    return templates


def _model_to_compare(loaded: LoadedModel, options: Any, onnx_path: str | None
                      ) -> tuple[onnx.ModelProto, Graph, Graph | None, TorchGraphRecorder | None]:
    """The ONNX model to compare: a fresh export (with provenance and a recorded torch graph) or a file."""
    if onnx_path is not None:
        path = Path(onnx_path)
        try:
            model = onnx.load(str(path))
        except Exception as exc:
            raise ModelLoadError(f"Cannot read the ONNX file {path}: {exc}", "Check the path given to --onnx.") from exc
        return model, onnx_to_graph(model), None, None
    recorder = TorchGraphRecorder()
    with recorder.hooks(len(loaded.example_inputs)):
        result = TorchScriptExporter().export(loaded, options, diagnose=False, run_check=False)
    return result.model, result.onnx_graph, result.torchscript_graph, recorder


def _build_capture(recorder: TorchGraphRecorder, messages: list[str]):
    try:
        return recorder.build()
    except TorchCaptureError as exc:
        messages.append(f"Torch values cannot be captured node by node: {exc}")
        return None


def _runnable(plan: ReferencePlan) -> ReferencePlan:
    if plan.missing:
        raise ExportError("The ONNX model has nodes ONNX Runtime cannot run, and no reference could be built: "
                          + "; ".join(plan.missing),
                          "Fix these nodes first (python main.py check MODEL lists them).")
    return plan


def _torch_device(provider: str) -> tuple[str, str]:
    if provider.lower() != "cuda":
        return "cpu", ""
    available, _why = cuda_available()
    return ("cuda", "") if available else ("cpu", "")  # create_session states the fallback itself


def _compare_run(module: torch.nn.Module, session: Any, input_names: list[str], inputs: tuple[torch.Tensor, ...],
                 tolerances: ToleranceTable, run: int, device: str) -> list[OutputStats]:
    with torch.no_grad():
        torch_outputs = flatten_outputs(module(*[t.to(device) for t in inputs]))
    feeds = feeds_for(session, input_names, [to_numpy(t) for t in inputs])
    onnx_outputs = session.run(None, feeds)
    stats: list[OutputStats] = []
    for index, (name, expected) in enumerate(torch_outputs):
        rtol, atol = tolerances.for_dtype(str(expected.dtype))
        if index < len(onnx_outputs):
            stats.append(compare_arrays(name, expected, np.asarray(onnx_outputs[index]), rtol, atol, run))
        else:
            stats.append(missing_output(name, expected, rtol, atol, run, "ONNX has no output at this position"))
    for extra in onnx_outputs[len(torch_outputs):]:
        array = np.asarray(extra)
        stats.append(missing_output(f"onnx_only[{len(stats)}]", array, 0.0, 0.0, run,
                                    "ONNX has an output torch does not return"))
    return stats


def _without_plot_data(stats: OutputStats) -> OutputStats:
    from fixport.core.model.output_stats import ErrorHistogram, ValuePairs

    return replace(stats, histogram=ErrorHistogram(), scatter=ValuePairs())


def _analyze_nodes(loaded: LoadedModel, export_options: Any, inputs: tuple[torch.Tensor, ...], run: int,
                   provider: str, device: str, tolerances: ToleranceTable, templates: dict[str, str],
                   messages: list[str]) -> NodeAnalysis | None:
    """Diagnosing export (no constant folding), both sides captured, compared node by node."""
    diagnosing_options = replace(export_options, do_constant_folding=False)
    recorder = TorchGraphRecorder()
    try:
        with recorder.hooks(len(loaded.example_inputs)):
            result = TorchScriptExporter().export(loaded, diagnosing_options, diagnose=False, run_check=False)
        capture = recorder.build()
    except (FixportError, TorchCaptureError) as exc:
        messages.append(f"Per-node analysis skipped: the diagnosing export failed: {exc}")
        return None
    plan = plan_references(result.model, result.onnx_graph, capture)
    if plan.missing:
        messages.append("Per-node analysis skipped: " + "; ".join(plan.missing))
        return None
    messages.append(DIAGNOSING_EXPORT_NOTE)

    def session_factory(model: onnx.ModelProto) -> Any:
        return plan.create_session(model, provider).session

    try:
        analysis = analyze_nodes(plan.model, result.onnx_graph, result.torchscript_graph, capture, inputs,
                                 loaded.input_names, session_factory, tolerances, templates, run, device)
    except Exception as exc:  # ORT or the torch interpreter on an unusual graph: report, keep the outputs
        messages.append(f"Per-node analysis failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        return None
    messages += analysis.messages
    return analysis
