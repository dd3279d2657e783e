"""The `compare --exporters` job: one model exported by two exporters, each held to torch and to the other.

Per exporter: the plain export is checked (what it needs), then exported with the project's fixes
for that exporter, or where it has none and the plain export fails, the fixes ``fix --auto`` finds
(kept in the result, not saved); that export is compared with torch (outputs, size, latency). Then,
on one input set both saw, each export's diagnosing export (no constant folding) is compared with
torch node by node, and the two are held to each other per output and per value they both link
to the same source line (:mod:`fixport.core.comparison.node_alignment`).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from fixport.core.analysis.analysis import analyze
from fixport.core.checks.value_reads import integer_inputs_read
from fixport.core.comparison.compare_job import compare, input_sets
from fixport.core.comparison.intermediates import all_node_values, analyze_nodes
from fixport.core.comparison.node_alignment import NodeSide, align, output_agreements
from fixport.core.exporters.choice import exporter_for, resolved_export_options
from fixport.core.fixing.auto_fix import auto_fix
from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.model_cache import open_model
from fixport.core.model.cancel import CancelCallback, Cancelled, ProgressCallback, check_cancelled, report
from fixport.core.model.errors import FixportError, ModelLoadError
from fixport.core.model.exporter_comparison import (
    FIXES_FROM_AUTO_FIX,
    FIXES_FROM_PROJECT,
    NO_AUTO_FIX,
    NO_FIXES_NEEDED,
    ExporterComparison,
    ExporterRun,
)
from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.project import FixMapping
from fixport.core.model.requests import AnalyzeRequest, AutoFixRequest, CompareExportersRequest, CompareRequest
from fixport.core.model.tolerances import ToleranceTable
from fixport.core.model.vocabulary import LOADING_STAGE
from fixport.core.onnx_io.reference_plan import plan_references


@dataclass
class _Plan:
    """How one exporter's export is made: its option overrides and fixes."""

    run: ExporterRun
    options: dict[str, Any]
    mappings: list[FixMapping]


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
    plans: list[_Plan] = []
    share = 0.7 / len(request.exporters)
    for index, name in enumerate(request.exporters):
        part = _part(progress, index * share, share, name)
        plan = _plan(request, name, part, cancelled)
        plans.append(plan)
        result.runs.append(plan.run)
        if plan.run.error:
            continue
        try:
            plan.run.comparison = compare(_compare_request(request, plan), _part(part, 0.5, 0.5, "comparing"),
                                          cancelled)
        except Cancelled:
            raise
        except FixportError as exc:
            plan.run.error, plan.run.hint = exc.message, exc.hint
    result.seconds["exports"] = time.perf_counter() - started
    compared = [plan for plan in plans if plan.run.compared]
    if len(compared) == len(plans) and not request.analyze_nodes:
        result.messages.append("The two exports were not held to each other (--no-node-analysis).")
    elif len(compared) == len(plans):
        node_started = time.perf_counter()
        _hold_to_each_other(result, request, loaded, plans, progress, cancelled)
        result.seconds["nodes"] = time.perf_counter() - node_started
    else:
        result.messages.append("The two exports were not held to each other: "
                               + "; ".join(f"{p.run.exporter}: {p.run.error}" for p in plans if not p.run.compared))
    result.seconds["total"] = time.perf_counter() - started
    report(progress, 1.0, "done")
    return result


def _part(progress: ProgressCallback | None, start: float, width: float, label: str) -> ProgressCallback | None:
    """``progress`` for one stage: its fractions mapped into [start, start + width], its messages labelled."""
    if progress is None:
        return None
    return lambda fraction, message="": progress(start + width * fraction, f"{label}: {message}" if message else label)


def problem_line(problem: UnsupportedNode) -> str:
    """``aten::threshold (symbolic_rejected) at model.py:12``."""
    where = f" at {problem.source}" if problem.source else ""
    return f"{problem.display_kind} ({problem.reason}){where}"


def _plan(request: CompareExportersRequest, name: str, progress: ProgressCallback | None,
          cancelled: CancelCallback | None) -> _Plan:
    """What the plain export of ``name`` needs and the fixes its compared export applies."""
    options = {**request.options, "exporter": name}
    run = ExporterRun(name)
    plan = _Plan(run, options, list(request.mappings_by_exporter.get(name, [])))
    try:
        plain = analyze(AnalyzeRequest(request.model, options, [], other_shapes=request.other_shapes),
                        _part(progress, 0.0, 0.2, "checking"), cancelled)
    except (Cancelled, ModelLoadError):
        raise
    except FixportError as exc:
        run.error, run.hint = f"the plain export failed: {exc.message}", exc.hint
        return plan
    run.opset = plain.options.opset
    run.problems = [problem_line(problem) for problem in plain.unsupported]
    search_changes: list[str] = []  # what fix --auto changed besides the fixes: the opset, capture settings
    if plan.mappings:
        run.fixes_from = FIXES_FROM_PROJECT
    elif not plain.unsupported:
        run.fixes_from = NO_FIXES_NEEDED
    elif not request.auto_fix:
        run.fixes_from = NO_AUTO_FIX
    else:
        run.fixes_from = FIXES_FROM_AUTO_FIX
        try:
            fixed = auto_fix(AutoFixRequest(request.model, options, analysis=plain, other_shapes=request.other_shapes),
                             _part(progress, 0.2, 0.3, "fix --auto"), cancelled)
        except (Cancelled, ModelLoadError):
            raise
        except FixportError as exc:
            run.error, run.hint = f"fix --auto failed: {exc.message}", exc.hint
            return plan
        plan.mappings = list(fixed.mappings)
        plan.options = {**options, "opset": fixed.after.options.opset,
                        "capture_settings": list(fixed.after.options.capture_settings)}
        run.opset = fixed.after.options.opset
        run.left_unfixed = [problem_line(problem) for problem in fixed.after.unsupported]
        if fixed.opset_raised:
            search_changes.append(f"opset raised from {fixed.opset_raised[0]} to {fixed.opset_raised[1]}")
        search_changes += [f"captured with {setting}" for setting in fixed.capture_settings]
    run.fixes = [f"{mapping.label} -> {mapping.template_id}" for mapping in plan.mappings] + search_changes
    return plan


def _compare_request(request: CompareExportersRequest, plan: _Plan) -> CompareRequest:
    return CompareRequest(request.model, plan.options, plan.mappings, provider=request.provider, runs=request.runs,
                          rtol=request.rtol, atol=request.atol, analyze_nodes=False, precision=request.precision,
                          torch_device=request.torch_device, other_shapes=request.other_shapes,
                          from_project=plan.run.fixes_from == FIXES_FROM_PROJECT,
                          latency_runs=request.latency_runs)


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
                        plans: list[_Plan], progress: ProgressCallback | None,
                        cancelled: CancelCallback | None) -> None:
    index = shared_input_set([plan.run for plan in plans], request.runs)
    read = integer_inputs_read(loaded.module, list(loaded.example_inputs), list(loaded.input_names)) \
        if index >= 2 else {}  # as compare drew that set
    result.input_set, inputs = input_sets(loaded.example_inputs, index + 1, read)[index]
    tolerances = ToleranceTable(rtol=request.rtol, atol=request.atol)
    sides = []
    share = 0.3 / len(plans)
    for position, plan in enumerate(plans):
        part = _part(progress, 0.7 + position * share, share, f"{plan.run.exporter}: node by node")
        side = _node_side(loaded, plan, inputs, index, request.provider, tolerances, result.messages, part, cancelled)
        if side is None:
            return
        sides.append(side)
    first, second = sides
    result.held_to_each_other = True
    result.outputs = output_agreements(first, second, tolerances)
    result.nodes, result.unaligned = align(first, second, tolerances)


def _node_side(loaded: LoadedModel, plan: _Plan, inputs: tuple[torch.Tensor, ...], run_index: int, provider: str,
               tolerances: ToleranceTable, messages: list[str], progress: ProgressCallback | None,
               cancelled: CancelCallback | None) -> NodeSide | None:
    """One export's diagnosing export compared with torch node by node, with the ONNX values kept."""
    name = plan.run.exporter
    options = resolved_export_options(loaded.settings, plan.options)
    exporter = exporter_for(name)
    report(progress, 0.0, "exporting without constant folding")
    with exporter.fixes_applied(plan.mappings, options) as custom_opsets:
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
        plan.run.first_divergent, plan.run.nodes_compared = first, len(errors)
        plan.run.onnx_graph = comparable.onnx_graph
        report(progress, 0.8, "keeping the values")
        wanted = [error.output for error in errors] + list(comparable.onnx_graph.outputs)
        values = all_node_values(reference.model, inputs, comparable.input_names, session_factory, wanted)
    source_ops = {node.id: node.kind for node in comparable.source_graph.nodes}
    return NodeSide(name, errors, source_ops, values, list(comparable.onnx_graph.outputs))
