"""Jobs the export worker runs. Each is a plain function of picklable arguments that takes a
``progress`` callback and returns a picklable result; the worker process calls them by name."""
from __future__ import annotations

import time
from dataclasses import fields
from typing import Any

from core.cancel import ProgressCallback, report
from core.diagnosis import nodes_without_runtime_kernel
from core.exporter import ExportOptions, ExportResult, TorchScriptExporter
from core.fixing import applied_mappings
from core.project import FixMapping
from core.job_types import AnalysisResult, ModelRequest
from core.loading import LoadedModel, load_model
from core.onnx_files import save_model


_model_cache: dict[tuple, LoadedModel] = {}
MODEL_CACHE_SIZE = 4


def open_model(request: ModelRequest) -> LoadedModel:
    """Load through a small cache: re-exports of the same model skip loading."""
    key = request.cache_key()
    if key not in _model_cache:
        if len(_model_cache) >= MODEL_CACHE_SIZE:
            _model_cache.pop(next(iter(_model_cache)))
        _model_cache[key] = load_model(request.path, request.inputs, trust=request.trust,
                                       search_paths=request.search_paths)
    return _model_cache[key]


def resolve_export_options(settings: dict[str, Any], overrides: dict[str, Any] | None) -> ExportOptions:
    """The model file's own settings (FIXPORT_EXAMPLE), then whatever the caller set."""
    names = {f.name for f in fields(ExportOptions)}
    values: dict[str, Any] = {}
    if "opset" in settings:
        values["opset"] = settings["opset"]
    values.update({k: v for k, v in dict(settings.get("export_options", {})).items() if k in names})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"Unknown export options: {', '.join(sorted(unknown))}")
    return ExportOptions(**values)


def ping(progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Warm the worker up: import torch and the exporter, report versions."""
    import onnx
    import onnxruntime
    import torch

    from core.exporter_registry import load_all_builtin_symbolics

    load_all_builtin_symbolics()
    return {"pid": __import__("os").getpid(), "torch": torch.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "threads": torch.get_num_threads()}


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

    from core.onnx_graph import onnx_to_graph

    model = onnx.load(str(loaded.path), load_external_data=False)
    graph = onnx_to_graph(model)
    local_functions = {(f.domain, f.name) for f in model.functions}
    problems = nodes_without_runtime_kernel(graph, local_functions, None)
    opsets = {o.domain or "onnx": o.version for o in model.opset_import}
    options.opset = opsets.get("onnx", options.opset)
    return AnalysisResult(str(loaded.path), "onnx", options, None, graph, problems,
                          list(graph.inputs), [], notes=list(loaded.notes), seconds=seconds)


def op_info(kind: str, progress: ProgressCallback | None = None):
    """Torch's schemas and built-in symbolic opsets for the Inspector."""
    from core.op_docs import torch_op_info

    return torch_op_info(kind)
