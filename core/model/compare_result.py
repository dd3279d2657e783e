"""Results of a comparison: per output, per node, and the first divergent node (no torch import)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.model.output_stats import OutputStats, json_number

MAX_RUNS = 100


@dataclass
class NodeError:
    """How far one ONNX node's output is from its TorchScript counterpart's."""

    onnx_node: str
    onnx_kind: str
    output: str
    torchscript_node: str
    torchscript_kind: str
    scope: str
    source: str
    template: str
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    mean_abs: float
    max_rel: float
    rtol: float
    atol: float
    exceeds: bool
    inputs_exceed: bool = False  # an upstream compared value was already out of tolerance
    introduced_max_abs: float | None = None  # the node group re-run alone on torch's inputs
    introduced_exceeds: bool | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "onnx_node": self.onnx_node, "onnx_kind": self.onnx_kind, "output": self.output,
            "torchscript_node": self.torchscript_node, "torchscript_kind": self.torchscript_kind,
            "scope": self.scope, "source": self.source, "template": self.template, "shape": list(self.shape),
            "dtype": self.dtype, "max_abs": json_number(self.max_abs), "mean_abs": json_number(self.mean_abs),
            "max_rel": json_number(self.max_rel), "exceeds": self.exceeds, "inputs_exceed": self.inputs_exceed,
            "introduced_max_abs": None if self.introduced_max_abs is None else json_number(self.introduced_max_abs),
            "introduced_exceeds": self.introduced_exceeds, "note": self.note,
        }


@dataclass
class NodeAnalysis:
    """Per-node errors of one input set and the node where the outputs start to diverge."""

    run: int
    nodes: list[NodeError] = field(default_factory=list)
    first_divergent: NodeError | None = None
    skipped_shape_mismatch: int = 0
    messages: list[str] = field(default_factory=list)


@dataclass
class CompareResult:
    """Everything the CLI prints and the GUI plots after one comparison (picklable)."""

    model_path: str
    onnx_source: str  # "export (opset 17)" or the compared file
    provider_requested: str
    providers_used: list[str]
    runs: int
    outputs: list[OutputStats]  # per output, the worst run, with histogram and scatter data
    per_run: list[list[OutputStats]] = field(default_factory=list)  # numbers only, no plot data
    node_analysis: NodeAnalysis | None = None
    messages: list[str] = field(default_factory=list)
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.outputs) and all(output.passed for output in self.outputs)

    def to_json(self) -> dict[str, Any]:
        """The `compare --json` contract."""
        analysis = self.node_analysis
        first = analysis.first_divergent if analysis else None
        return {
            "model": self.model_path, "onnx_source": self.onnx_source,
            "provider_requested": self.provider_requested, "providers_used": self.providers_used,
            "messages": self.messages, "runs": self.runs, "pass": self.passed,
            "outputs": [output.to_json() for output in self.outputs],
            "first_divergent": None if first is None else {
                "onnx_node": first.onnx_node, "torchscript_kind": first.torchscript_kind, "scope": first.scope,
                "source": first.source, "template": first.template, "max_abs": first.to_json()["max_abs"],
                "introduced_max_abs": first.to_json()["introduced_max_abs"], "run": analysis.run},
            "nodes": [node.to_json() for node in analysis.nodes] if analysis else [],
            "tolerances": {dtype: list(pair) for dtype, pair in self.tolerances.items()},
            "seconds": {name: round(value, 3) for name, value in self.seconds.items()},
        }
