"""The `compare_runtimes` job: the export compared with torch in each runtime (ONNX Runtime,
OpenVINO), then the runtimes with each other node by node, so "passes in one, differs in the other"
names the node where the two part, and its torch source.

The runtimes are compared on the diagnosing export (no constant folding, as the per-node analysis
against torch uses), every node output made a graph output, on the example inputs. ONNX graphs are
topologically sorted, so the first node in graph order whose output differs while every value it
reads agrees is where the runtimes part.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from fixport.core.analysis.job_context import open_job
from fixport.core.comparison.compare_job import compare
from fixport.core.comparison.intermediates import SKIPPED_ONNX_OPS, all_node_values
from fixport.core.foundation.errors import FixportError
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.reference_plan import plan_references
from fixport.core.project.tolerances import BF16_COMPUTE_TABLE_NAME, ToleranceTable
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.requests import CompareRequest
from fixport.core.records.runtime_pair import RuntimeDifference, RuntimesCompareRequest, RuntimesComparison
from fixport.core.statistics.output_stats import compare_arrays
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.words.graph import Graph
from fixport.core.words.runtimes import RUNTIME_TITLES, RUNTIMES, provider_for, refuse_missing_runtime


def compare_runtimes(request: RuntimesCompareRequest, progress: ProgressCallback | None = None,
                     cancelled: CancelCallback | None = None) -> RuntimesComparison:
    """Each runtime against torch, then the two against each other; see the module docstring."""
    runtimes = list(dict.fromkeys(request.runtimes))
    unknown = [name for name in runtimes if name not in RUNTIMES]
    if len(runtimes) != 2 or unknown:
        raise FixportError(f"--runtimes {','.join(request.runtimes)}: give two different runtimes of "
                           f"{', '.join(RUNTIMES)}.", "E.g. --runtimes ort,openvino.")
    providers = [provider_for(name, request.provider) for name in runtimes]
    for provider in providers:
        refuse_missing_runtime(provider)
    results: list[CompareResult | None] = []
    errors: list[str] = []
    for index, (name, provider) in enumerate(zip(runtimes, providers)):
        report(progress, 0.45 * index, f"comparing torch with {RUNTIME_TITLES[name]}")
        try:
            results.append(compare(CompareRequest(
                request.model, dict(request.options), list(request.mappings), provider=provider, runs=request.runs,
                rtol=request.rtol, atol=request.atol, analyze_nodes=request.analyze_nodes,
                precision=request.precision, from_project=request.from_project), None, cancelled))
            errors.append("")
        except FixportError as error:  # this runtime refuses the export: said, and the other still compared
            results.append(None)
            errors.append(error.message)
    comparison = RuntimesComparison(runtimes, results, errors)
    if any(errors):
        comparison.messages.append("The runtimes were not compared with each other: one cannot run the export.")
        return comparison
    report(progress, 0.9, "comparing the runtimes node by node")
    tolerances = ToleranceTable(rtol=request.rtol, atol=request.atol)
    if any(result is not None and result.tolerance_name == BF16_COMPUTE_TABLE_NAME for result in results):
        tolerances = tolerances.for_bfloat16_compute()
    _compare_between(request, providers, tolerances, comparison, cancelled)
    report(progress, 1.0, "done")
    return comparison


def _compare_between(request: RuntimesCompareRequest, providers: list[str], tolerances: ToleranceTable,
                     comparison: RuntimesComparison, cancelled: CancelCallback | None) -> None:
    """Every node output of the diagnosing export in both runtimes, on the example inputs: the first
    that differs into ``comparison``."""
    context = open_job(request.model, request.options, list(request.mappings))
    loaded = context.loaded
    options = context.export_options()
    with context.exporter.fixes_applied(list(request.mappings), options) as custom_opsets:
        options.custom_opsets = {**custom_opsets, **options.custom_opsets}
        comparable = context.exporter.export_for_comparison(loaded, replace(options, do_constant_folding=False),
                                                            cancelled)
        plan = plan_references(comparable.model, comparable.onnx_graph, comparable.custom_node_references)
        if plan.missing:
            comparison.messages.append("The runtimes were not compared node by node: " + "; ".join(plan.missing))
            return
        values = []
        for provider in providers:
            check_cancelled(cancelled)

            def session_for(model: OnnxModel, provider: str = provider) -> Any:
                return plan.create_session(model, provider, precision=request.precision).session

            values.append(all_node_values(plan.model, loaded.example_inputs, loaded.input_names, session_for))
    difference, compared = first_difference(comparable.onnx_graph, comparable.source_graph, *values, tolerances)
    comparison.first_difference, comparison.nodes_compared = difference, compared


def first_difference(onnx_graph: Graph, source_graph: Graph | None, first: dict[str, np.ndarray],
                     second: dict[str, np.ndarray], tolerances: ToleranceTable) -> tuple[RuntimeDifference | None, int]:
    """The first node (graph order) with an output beyond tolerance between ``first`` and ``second``
    while every value it reads agrees, and how many node outputs were compared."""
    differing: set[str] = set()
    found: RuntimeDifference | None = None
    compared = 0
    for node in onnx_graph.nodes:
        if node.op_type in SKIPPED_ONNX_OPS:
            continue
        for name in node.outputs:
            if name not in first or name not in second:
                continue
            a, b = np.asarray(first[name]), np.asarray(second[name])
            if a.shape != b.shape or a.dtype.kind not in "fciub" or b.dtype.kind not in "fciub":
                continue
            rtol, atol = tolerances.for_values(str(a.dtype), _largest(a))
            stats = compare_arrays(name, a, b, rtol, atol, keep_plot_data=False)
            compared += 1
            if stats.passed:
                continue
            differing.add(name)
            if found is None and not differing.intersection(node.inputs):
                found = _difference(node, name, stats.max_abs, rtol, atol, source_graph)
    return found, compared


def _largest(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)] if values.dtype.kind in "fc" else values
    return float(np.abs(finite).max()) if finite.size else 0.0


def _difference(node: Any, output: str, max_abs: float, rtol: float, atol: float,
                source_graph: Graph | None) -> RuntimeDifference:
    origin = source_graph.node_by_id.get(node.origin[0]) if source_graph is not None and node.origin else None
    return RuntimeDifference(onnx_node=node.name or node.id, onnx_kind=node.kind, output=output,
                             torch_kind=origin.kind if origin else "", scope=origin.scope if origin else node.scope,
                             source=origin.source if origin else "", max_abs=float(max_abs), rtol=rtol, atol=atol)

