"""The optimizer guard: the export as it will be deployed, held to torch.

Each variant (ONNX Runtime at a graph optimization level, or a post-export optimizer whose result
ONNX Runtime runs unoptimized) runs on the compare's input sets against torch's outputs, which the
compare already computed: torch does not run again. A variant that fails to load or changes the
numbers is bisected with its tool's own switches to the smallest set of passes to turn off; that
set, verified, is the fix. Each variant that passes is measured: size, node count, latency.
"""
from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from fixport.core.deployment.optimizer_bisect import smallest_set_to_turn_off
from fixport.core.deployment.optimizer_divergence import first_divergent_node
from fixport.core.deployment.optimizer_tools import TOOLS, ort_session, switches_of
from fixport.core.onnx_io.runtime_cost import median_latency_ms, model_bytes
from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import compare_output_lists
from fixport.core.words.cancel import CancelCallback, ProgressCallback, check_cancelled, report
from fixport.core.words.optimizer_guard import (
    CHANGED,
    INSTALL_HINT,
    ORT_TOOL,
    PASSED,
    REFUSED,
    UNAVAILABLE,
    OptimizerFix,
    OptimizerReport,
    Variant,
    VariantOutcome,
)

MESSAGE_CHARS = 300


@dataclass
class Reference:
    """One input set of the compare: the ONNX feeds and torch's outputs (name, array) on them."""

    run: int
    feeds: dict[str, np.ndarray]
    expected: list[tuple[str, np.ndarray]]


@dataclass
class _Trial:
    """A variant tried with some switches off: how it did, and what to measure where it passed."""

    status: str
    message: str = ""
    max_abs: float | None = None
    worst_output: str = ""
    session: Any = None
    model: onnx.ModelProto | None = None  # what the session runs (the optimizer's output, or the export)


def guard_optimizers(model: onnx.ModelProto, variants: Sequence[Variant], references: Sequence[Reference],
                     tolerances: ToleranceTable, latency_runs: int = 0, progress: ProgressCallback | None = None,
                     cancelled: CancelCallback | None = None) -> OptimizerReport:
    """Hold each of ``variants`` of ``model`` to torch on ``references``; see the module docstring."""
    result = OptimizerReport()
    if not references:
        result.notes.append("Optimizer guard skipped: no input set ran in ONNX Runtime to hold the variants to.")
        return result
    for index, variant in enumerate(variants):
        check_cancelled(cancelled)
        report(progress, index / max(1, len(variants)), f"checking {variant.name}")
        result.outcomes.append(_guard_one(model, variant, references, tolerances, latency_runs, cancelled))
    result.notes.append(f"Optimizer guard: each variant ran on CPU on {len(references)} input set(s), against the "
                        "torch outputs of the comparison above, with its tolerances.")
    return result


def _guard_one(model: onnx.ModelProto, variant: Variant, references: Sequence[Reference],
               tolerances: ToleranceTable, latency_runs: int, cancelled: CancelCallback | None) -> VariantOutcome:
    if variant.tool != ORT_TOOL and not TOOLS[variant.tool].installed():
        return VariantOutcome(variant.name, UNAVAILABLE,
                              f"{variant.tool} is not installed: {INSTALL_HINT[variant.tool]}.")
    plain = _try(model, variant, [], references, tolerances)
    outcome = VariantOutcome(variant.name, plain.status, plain.message, plain.max_abs, plain.worst_output)
    if plain.status == PASSED:
        _measure(outcome, plain, references, latency_runs)
        return outcome
    if plain.status == CHANGED and plain.model is not None:
        _name_first_divergent(outcome, model, plain.model, references[0].feeds, tolerances)
    if variant == Variant(ORT_TOOL, "disabled"):  # nothing to turn off: the export itself fails in ONNX Runtime
        return outcome
    found: list[_Trial] = []

    def passes_with_off(disabled: list[str]) -> bool:
        trial = _try(model, variant, disabled, references, tolerances)
        found[:] = [trial] if trial.status == PASSED else found
        return trial.status == PASSED

    culprits, outcome.bisect_tries = smallest_set_to_turn_off(switches_of(variant.tool, model, variant.level or "all"),
                                                                   passes_with_off, cancelled)
    if culprits is None:
        outcome.message += (f" Turning off every {variant.tool} pass that changed the model does not avoid it: "
                            "deploy without this optimizer.")
        return outcome
    outcome.culprits = culprits
    outcome.fix = OptimizerFix(variant.tool, variant.level, culprits)
    fixed = _try(model, variant, culprits, references, tolerances)  # the last passing trial may have had more off
    if fixed.status == PASSED:
        _measure(outcome, fixed, references, latency_runs)
    return outcome


def _try(model: onnx.ModelProto, variant: Variant, disabled: list[str], references: Sequence[Reference],
         tolerances: ToleranceTable) -> _Trial:
    """``variant`` with ``disabled`` off, run on every reference."""
    if variant.tool == ORT_TOOL:
        optimized = model
        try:
            session = ort_session(model, variant.level, disabled)
        except Exception as exc:  # ORT's own exception types: the model does not load at this level
            return _Trial(REFUSED, f"ONNX Runtime cannot load the export at level {variant.level}: {_line(exc)}")
    else:
        try:
            optimized = TOOLS[variant.tool].apply(model, disabled)
        except Exception as exc:  # the optimizer's own errors on this model
            return _Trial(REFUSED, f"{variant.tool} fails on the export: {_line(exc)}")
        try:
            session = ort_session(optimized, "disabled")
        except Exception as exc:  # ORT's own exception types: the optimizer wrote a model ORT refuses
            return _Trial(REFUSED, f"ONNX Runtime cannot load {variant.tool}'s model: {_line(exc)}", model=optimized)
    worst: tuple[float, str] = (-1.0, "")
    for reference in references:
        try:
            actual = session.run(None, {name: value for name, value in reference.feeds.items()
                                        if name in {i.name for i in session.get_inputs()}})
        except Exception as exc:  # ORT's own exception types: the variant fails on these inputs
            return _Trial(REFUSED, f"{variant.name} fails on input set {reference.run + 1}: {_line(exc)}",
                          model=optimized)
        stats = compare_output_lists(reference.expected, actual, tolerances, reference.run, keep_plot_data=False)
        for output in stats:
            value = output.max_abs if output.compared and np.isfinite(output.max_abs) else float("inf")
            worst = max(worst, (value, output.name))
        failing = [s for s in stats if not s.passed]
        if failing:
            first = failing[0]
            detail = first.problem or f"max abs {first.max_abs:.3g}"
            return _Trial(CHANGED, f"{variant.name} changes {first.name} at input set {reference.run + 1} ({detail}).",
                          worst[0], worst[1], session, optimized)
    return _Trial(PASSED, "", worst[0], worst[1], session, optimized)


def _measure(outcome: VariantOutcome, trial: _Trial, references: Sequence[Reference], latency_runs: int) -> None:
    if trial.model is not None:
        outcome.file_bytes, outcome.node_count = model_bytes(trial.model), len(trial.model.graph.node)
    if latency_runs and trial.session is not None:
        names = {i.name for i in trial.session.get_inputs()}
        feeds = {name: value for name, value in references[0].feeds.items() if name in names}
        outcome.latency_ms = median_latency_ms(trial.session, feeds, latency_runs)


def _name_first_divergent(outcome: VariantOutcome, plain: onnx.ModelProto, optimized: onnx.ModelProto,
                          feeds: dict[str, np.ndarray], tolerances: ToleranceTable) -> None:
    """The first divergent node of the optimized graph (ONNX Runtime's own, saved at its level)."""
    try:
        if outcome.variant.startswith(f"{ORT_TOOL}:"):
            optimized = _ort_optimized_graph(plain, outcome.variant.split(":", 1)[1])
        found = first_divergent_node(plain, optimized, feeds, tolerances, lambda m: ort_session(m, "disabled"))
    except Exception as exc:  # ORT or onnx on a graph it wrote itself: the outcome stands without the node
        outcome.message += f" (First divergent node not found: {_line(exc)})"
        return
    if found is not None:
        outcome.first_divergent_node, outcome.first_divergent_kind = found


def _ort_optimized_graph(model: onnx.ModelProto, level: str) -> onnx.ModelProto:
    """The graph ONNX Runtime runs at ``level``, as it saves it (``optimized_model_filepath``)."""
    import onnxruntime as ort

    from fixport.core.deployment.optimizer_tools import ORT_LEVEL_VALUES

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "optimized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ORT_LEVEL_VALUES[level]
        options.optimized_model_filepath = str(path)
        options.log_severity_level = 3
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(str(path))


def _line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text[:MESSAGE_CHARS]
