"""The `compare --exporters` job: one model exported by two exporters, each held to torch and to the other.

Per exporter, the "run one exporter" job (:mod:`fixport.core.exporter_comparison.exporter_run`): the
plain export is checked (what it needs), then exported with the project's fixes for that exporter,
or where it has none and the plain export fails, the fixes ``fix --auto`` finds (kept in the result,
not saved); that export is compared with torch (outputs, size, latency). Then,
on one input set both saw, each export's diagnosing export (no constant folding) is compared with
torch node by node, and the two are held to each other per output and per value they both link
to the same source line (:mod:`fixport.core.comparison.node_alignment`).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from fixport.core.checks.value_reads import integer_inputs_read
from fixport.core.comparison.compare_job import input_sets
from fixport.core.comparison.intermediates import all_node_values, analyze_nodes
from fixport.core.comparison.node_alignment import NodeSide, align, output_agreements
from fixport.core.exporter_comparison.exporter_run import run_exporter, within
from fixport.core.exporters.choice import exporter_for, resolved_export_options
from fixport.core.foundation.errors import FixportError, ModelLoadError
from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.model_cache import open_model
from fixport.core.onnx_io.reference_plan import plan_references
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.records.exporter_comparison import ExporterComparison, ExporterRun
from fixport.core.records.requests import CompareExportersRequest, CompareRequest, RunExporterRequest
from fixport.core.words.cancel import CancelCallback, Cancelled, ProgressCallback, check_cancelled, report
from fixport.core.words.vocabulary import LOADING_STAGE

# What to do about problems left that keep an export from running in ONNX Runtime
BLOCKED_HINT = ("Let fix --auto try the built-in fixes (not --no-auto-fix), or give this exporter's fixes in the "
                "project; `check` lists the problems.")


def compare_exporters(request: CompareExportersRequest, progress: ProgressCallback | None = None,
                      cancelled: CancelCallback | None = None) -> ExporterComparison:
    """See the module docstring."""
    started = time.perf_counter()
    report(progress, 0.0, LOADING_STAGE)
    loaded = open_model(request.model)
    if loaded.module is None:
        raise ModelLoadError(f"{loaded.path.name} is an ONNX file: there is no torch model to export.",
                             "Open the PyTorch model to compare its two exports.")
    result = ExporterComparison(str(loaded.path), list(request.exporters))
    share = 0.7 / len(request.exporters)
    for index, name in enumerate(request.exporters):
        run = run_exporter(_run_request(request, name), within(progress, index * share, share, name), cancelled,
                           label_steps=True)
        if run.blocking and not run.failed_step:
            run.hint = BLOCKED_HINT
        result.runs.append(run)
    result.seconds["exports"] = time.perf_counter() - started
    runs = result.runs
    if all(run.compared for run in runs) and not request.analyze_nodes:
        result.messages.append("The two exports were not held to each other (--no-node-analysis).")
    elif all(run.compared for run in runs):
        node_started = time.perf_counter()
        _hold_to_each_other(result, request, loaded, progress, cancelled)
        result.seconds["nodes"] = time.perf_counter() - node_started
    else:
        result.messages.append("The two exports were not held to each other: "
                               + "; ".join(f"{run.exporter}: {run.error}" for run in runs if not run.compared))
    result.seconds["total"] = time.perf_counter() - started
    report(progress, 1.0, "done")
    return result


def _run_request(request: CompareExportersRequest, name: str) -> RunExporterRequest:
    compare_settings = CompareRequest(request.model, provider=request.provider, runs=request.runs, rtol=request.rtol,
                                      atol=request.atol, analyze_nodes=False, precision=request.precision,
                                      torch_device=request.torch_device, latency_runs=request.latency_runs)
    return RunExporterRequest(request.model, {**request.options, "exporter": name},
                              list(request.mappings_by_exporter.get(name, [])), auto_fix=request.auto_fix,
                              other_shapes=request.other_shapes, compare=compare_settings)


def shared_input_set(runs: Sequence[ExporterRun], random_sets: int) -> int:
    """The input set the two are held to each other on: the first of the example and random sets
    where either export fails against torch, else the example inputs."""
    for index in range(random_sets):
        for run in runs:
            per_run = run.comparison.per_run if run.comparison else []
            if index < len(per_run) and not all(stats.passed for stats in per_run[index]):
                return index
    return 0


def _hold_to_each_other(result: ExporterComparison, request: CompareExportersRequest, loaded: LoadedModel,
                        progress: ProgressCallback | None,
                        cancelled: CancelCallback | None) -> None:
    index = shared_input_set(result.runs, request.runs)
    read = integer_inputs_read(loaded.module, list(loaded.example_inputs), list(loaded.input_names)) \
        if index >= 2 else {}  # as compare drew that set
    result.input_set, inputs = input_sets(loaded.example_inputs, index + 1, read)[index]
    tolerances = ToleranceTable(rtol=request.rtol, atol=request.atol)
    sides = []
    share = 0.3 / len(result.runs)
    for position, run in enumerate(result.runs):
        part = within(progress, 0.7 + position * share, share, f"{run.exporter}: node by node")
        side = _node_side(loaded, run, inputs, index, request.provider, tolerances, result.messages, part, cancelled)
        if side is None:
            return
        sides.append(side)
    first, second = sides
    result.held_to_each_other = True
    result.outputs = output_agreements(first, second, tolerances)
    result.nodes, result.unaligned = align(first, second, tolerances)


def _node_side(loaded: LoadedModel, run: ExporterRun, inputs: tuple[torch.Tensor, ...], run_index: int, provider: str,
               tolerances: ToleranceTable, messages: list[str], progress: ProgressCallback | None,
               cancelled: CancelCallback | None) -> NodeSide | None:
    """One export's diagnosing export compared with torch node by node, with the ONNX values kept."""
    name = run.exporter
    options = resolved_export_options(loaded.settings, run.options)
    exporter = exporter_for(name)
    report(progress, 0.0, "exporting without constant folding")
    with exporter.fixes_applied(run.mappings, options) as custom_opsets:
        options.custom_opsets = {**custom_opsets, **options.custom_opsets}
        try:
            comparable = exporter.export_for_comparison(loaded, replace(options, do_constant_folding=False), cancelled)
        except Cancelled:
            raise
        except FixportError as exc:
            messages.append(f"{name}: the diagnosing export failed, so the two were not compared node by node: "
                            f"{exc.message}")
            return None
        reference = plan_references(comparable.model, comparable.onnx_graph, comparable.custom_node_references)
        if reference.missing:
            messages.append(f"{name}: not compared node by node: " + "; ".join(reference.missing))
            return None

        def session_factory(model: Any) -> Any:
            check_cancelled(cancelled)
            return reference.create_session(model, provider).session

        errors, first = [], None
        if comparable.capture is None:
            messages.append(f"{name}: not compared with torch node by node: " + " ".join(comparable.notes))
        else:
            report(progress, 0.3, "comparing with torch")
            analysis = analyze_nodes(reference.model, comparable.onnx_graph, comparable.source_graph,
                                     comparable.capture, inputs, comparable.input_names, session_factory,
                                     tolerances, {}, run_index)
            errors, first = analysis.nodes, analysis.first_divergent
            messages += [f"{name}: {message}" for message in analysis.messages]
        run.first_divergent, run.nodes_compared = first, len(errors)
        run.onnx_graph = comparable.onnx_graph
        report(progress, 0.8, "keeping the values")
        wanted = [error.output for error in errors] + list(comparable.onnx_graph.outputs)
        values = all_node_values(reference.model, inputs, comparable.input_names, session_factory, wanted)
    source_ops = {node.id: node.kind for node in comparable.source_graph.nodes}
    return NodeSide(name, errors, source_ops, values, list(comparable.onnx_graph.outputs))
