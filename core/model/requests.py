"""One request dataclass per worker job: what the caller asks for, typed (no torch import).

The request's type picks the job (see :mod:`fixport.core.worker.jobs`), so a caller never names a
job by string and a typo is a TypeError at the call site, not an unknown job in the worker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.model.project import FixMapping
from fixport.core.model.results import AnalysisResult, ModelRequest


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
    # A generative checkpoint's prefill or decode: greedy decoding through both exported components
    # against torch's (one component's analysis runs it for both).
    generation_check: bool = True


@dataclass
class CompareRequest:
    """Compare torch and ONNX Runtime outputs on ``runs`` input sets, then node by node."""

    model: ModelRequest
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[FixMapping] = field(default_factory=list)
    onnx_path: str | None = None  # compare with this file instead of a fresh export
    provider: str = "cpu"
    runs: int = 1
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
