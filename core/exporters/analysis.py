"""The analyze job: open a model, export it with diagnosis and the project's fixes, save it."""
from __future__ import annotations

import time
from typing import Any

from fixport.core.exporters.applied_fixes import applied_mappings
from fixport.core.exporters.diagnosis import nodes_without_runtime_kernel
from fixport.core.exporters.torchscript import (
    ExportOptions,
    ExportResult,
    TorchScriptExporter,
)
from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import ProgressCallback, report
from fixport.core.model.export_options import resolve_export_options
from fixport.core.model.project import FixMapping
from fixport.core.model.results import AnalysisResult, ModelRequest
from fixport.core.onnx_io.onnx_files import save_model


def analyze(request: ModelRequest, options: dict[str, Any] | None = None, output: str | None = None,
            run_check: bool = True, mappings: list[FixMapping] | None = None,
            progress: ProgressCallback | None = None) -> AnalysisResult:
    """Open, trace and export with diagnosis and the project's fixes applied; save to
    ``output`` when given and nothing is left unsupported."""
    started = time.perf_counter()
    report(progress, 0.0, "loading the model")
    loaded = open_model(request)
    loaded_at = time.perf_counter()
    export_options = resolve_export_options(loaded.settings, options)
    if loaded.module is None:
        return _analyze_onnx_file(loaded, export_options, {"load": loaded_at - started})
    with applied_mappings(list(mappings or []), export_options.opset) as custom_opsets:
        export_options.custom_opsets = {**custom_opsets, **export_options.custom_opsets}
        result = TorchScriptExporter().export(loaded, export_options, run_check=run_check, progress=progress)
    exported_at = time.perf_counter()
    saved = [str(p) for p in save_model(result.model, output)] if output and result.ok else []
    return _analysis_from(loaded, export_options, result, saved, {
        "load": loaded_at - started, "export": exported_at - loaded_at,
        "save": time.perf_counter() - exported_at})


def _analysis_from(loaded: LoadedModel, options: ExportOptions, result: ExportResult,
                   saved: list[str], seconds: dict[str, float]) -> AnalysisResult:
    return AnalysisResult(
        model_path=str(loaded.path), source_kind=loaded.source_kind, options=options,
        torchscript_graph=result.torchscript_graph, onnx_graph=result.onnx_graph,
        unsupported=result.unsupported, input_names=list(loaded.input_names),
        input_shapes=[tuple(t.shape) for t in loaded.example_inputs], warnings=result.warnings,
        notes=list(loaded.notes), seconds=seconds, saved_files=saved)


def _analyze_onnx_file(loaded: LoadedModel, options: ExportOptions, seconds: dict[str, float]) -> AnalysisResult:
    import onnx

    from fixport.core.onnx_io.onnx_graph import onnx_to_graph

    model = onnx.load(str(loaded.path), load_external_data=False)
    graph = onnx_to_graph(model)
    local_functions = {(f.domain, f.name) for f in model.functions}
    problems = nodes_without_runtime_kernel(graph, local_functions, None)
    opsets = {o.domain or "onnx": o.version for o in model.opset_import}
    options.opset = opsets.get("onnx", options.opset)
    return AnalysisResult(str(loaded.path), "onnx", options, None, graph, problems,
                          list(graph.inputs), [], notes=list(loaded.notes), seconds=seconds)


