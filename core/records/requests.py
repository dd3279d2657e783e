"""One request dataclass per worker job: what the caller asks for, typed (no torch import).

The request's type picks the job (see :mod:`fixport.core.worker.jobs`), so a caller never names a
job by string and a typo is a TypeError at the call site, not an unknown job in the worker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.project.project import FixMapping
from fixport.core.records.compare_result import DEFAULT_RUNS
from fixport.core.records.results import AnalysisResult, ModelRequest
from fixport.core.records.runtime_cost import DEFAULT_LATENCY_RUNS
from fixport.core.words.problems import UnsupportedNode


@dataclass
class PingRequest:
    """Warm the worker up and report its versions."""


@dataclass
class AnalyzeRequest:
    """Export ``model`` with diagnosis and ``mappings`` applied; save to ``output`` when it is clean."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)  # export option overrides, e.g. {"opset": 14}
    mappings: list[FixMapping] = field(default_factory=list)
    output: str | None = None
    run_check: bool = True  # run the exported model once in ONNX Runtime
    # Input shapes (by input name) to check at instead of the sizes derived from the dynamic axes.
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    # Also at build()'s other input sets (not for --suggest-dynamic: with one dim dynamic, each try would fail there)
    at_input_sets: bool = True
    latency_runs: int = 0  # time the export in ONNX Runtime (median of this many runs; 0: not timed)
    # A generative checkpoint's prefill or decode: greedy decoding through both exported components
    # against torch's (one component's analysis runs it for both).
    generation_check: bool = True
    runtime: str = "ort"  # "openvino": the outputs compared in OpenVINO (core/words/runtimes.py)
    # A checkpoint component's export kept in this directory (the caller's, deleted after; not reported
    # as saved), for a later component's generation check to decode through, as an export with -o does.
    kept_in: str | None = None


@dataclass
class BaselineRequest:
    """``torch.onnx.export`` alone with the same options (exporter, opset, dynamic axes, names) and
    inputs, none of Fixport's fixes, capture settings or passes; run in ONNX Runtime (CPU) and
    compared with torch at the example inputs and the other sizes and sets an analysis checks."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)  # as AnalyzeRequest's
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)  # as AnalyzeRequest's
    at_input_sets: bool = True


@dataclass
class CompareRequest:
    """Compare torch and ONNX Runtime outputs on ``runs`` input sets, then node by node."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[FixMapping] = field(default_factory=list)
    onnx_path: str | None = None  # compare with this file instead of a fresh export
    provider: str = "cpu"
    runs: int = DEFAULT_RUNS
    rtol: float | None = None
    atol: float | None = None
    templates_by_instance: dict[str, str] = field(default_factory=dict)
    analyze_nodes: bool = True
    precision: str = "strict"  # "deployed": the CUDA provider's defaults (TF32); see core/onnx_io/cuda_precision.py
    torch_device: str = "cpu"  # where the torch reference runs: "cpu" or "cuda"
    # Input shapes (by input name) to compare at instead of the sizes derived from the dynamic axes.
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    # The fixes come from a project `fix` saved (compare --project): advice never says to run fix again.
    from_project: bool = False
    latency_runs: int = DEFAULT_LATENCY_RUNS  # ONNX Runtime runs timed on the example inputs (0: not timed)
    optimize: str = ""  # --optimize: "ort,onnxscript", ... (core/words/optimizer_guard.py); "" checks none


@dataclass
class RunExporterRequest:
    """One exporter's run: check, then fix --auto where asked and the check found problems (never
    with the project's fixes), then compare with torch where the problems left let it run."""

    model: ModelRequest
    options: dict[str, Any]  # with "exporter"
    mappings: list[FixMapping] = field(default_factory=list)  # the project's fixes for this exporter
    auto_fix: bool = False
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)  # as AnalyzeRequest's
    # The check's analysis, when the caller holds it (a crash the caller caught): not run again.
    analysis: AnalysisResult | None = None
    # compare's settings (its model, options, mappings and other shapes are the run's); None: the defaults
    compare: CompareRequest | None = None


@dataclass
class CompareExportersRequest:
    """Export with each of ``exporters`` (its fixes from ``mappings_by_exporter``, else found by
    fix --auto where the plain export fails), compare each with torch and the two with each other."""

    model: ModelRequest
    exporters: list[str]
    options: dict[str, Any] = field(default_factory=dict)  # overrides for both (never "exporter")
    mappings_by_exporter: dict[str, list[FixMapping]] = field(default_factory=dict)
    auto_fix: bool = True
    provider: str = "cpu"
    runs: int = 1
    rtol: float | None = None
    atol: float | None = None
    precision: str = "strict"
    torch_device: str = "cpu"
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    latency_runs: int = DEFAULT_LATENCY_RUNS
    analyze_nodes: bool = True  # False: outputs only, the two not lined up node by node


@dataclass
class AutoFixRequest:
    """`fix --auto`: the best-ranked built-in template for every unsupported node, re-exported."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[FixMapping] = field(default_factory=list)
    output: str | None = None
    keep_opset: bool = False
    other_shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)  # as AnalyzeRequest's
    # The caller's analysis of this model with these options and mappings, when it holds one
    # (the window does): the search starts from it instead of exporting first.
    analysis: AnalysisResult | None = None
    # Above 0, the export without the fixes and with them are timed (median of this many ONNX
    # Runtime runs) when the search changed anything: AutoFixResult.cost_before and cost_after.
    latency_runs: int = 0
    # Seconds the search may take: past them it stops and returns the best state it verified,
    # listing in AutoFixResult.not_reached the kinds it did not get to (None: no limit).
    time_limit_s: float | None = None


@dataclass
class SuggestDynamicRequest:
    """Which input dims would generalise if declared dynamic: each exported dynamic on its own and
    checked at other sizes, with ``mappings`` applied."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[FixMapping] = field(default_factory=list)


@dataclass
class SynthesizeRequest:
    """Fixes generated for one op kind from what torch and ONNX already know (standard op, decomposition)."""

    kind: str
    opset: int
    exporter: str | None = None  # whose fixes: the project's exporter (None: the default one)


@dataclass
class FixOffersRequest:
    """The new kinds of fix (code change, graph rewrite, generated Function, capture setting) for one
    problem, as the Template dock offers them (``fixport.core.records.fix_offers``)."""

    problem: UnsupportedNode
    opset: int
    exporter: str | None = None  # the project's exporter (None: the default one)


@dataclass
class StubRequest:
    """A starting symbolic generated from an op's schema (or a Function's forward)."""

    kind: str
    opset: int
    input_types: list[str] = field(default_factory=list)
    python_op_name: str | None = None
    model: ModelRequest | None = None  # imported first, so the Function class (or custom op) is known
    exporter: str | None = None  # whose fix language: the project's exporter (None: the default one)


@dataclass
class OpInfoRequest:
    """Torch's schemas and built-in symbolic opsets for one op kind (the Inspector)."""

    kind: str
