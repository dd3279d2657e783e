"""Results of a comparison: per output, per node, and the first divergent node (no torch import)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fixport.core.records.generation_result import GenerationCheck
from fixport.core.records.runtime_cost import RuntimeCost
from fixport.core.statistics.output_stats import OutputStats, json_number
from fixport.core.words.export_dtype import ExportDtype
from fixport.core.words.internal_error import InternalError
from fixport.core.words.optimizer_guard import OptimizerReport
from fixport.core.words.runtimes import OPENVINO_NAME

MAX_RUNS = 100
# The example inputs and two random sets like them: a count or branch that depends on the values
# (keypoints above a threshold) holds at the example and fails at others.
DEFAULT_RUNS = 3
CPU_PROVIDER = "CPUExecutionProvider"
CUDA_PROVIDER = "CUDAExecutionProvider"
COPY_OP_TYPES = frozenset({"MemcpyToHost", "MemcpyFromHost"})  # ORT's own transfers between devices
MAX_NODES_NAMED = 12  # in one-line summaries


ValueKey = tuple[str, int]  # (instance key or FX node name, output position): one captured value

@dataclass
class NodePlacement:
    """Where ONNX Runtime ran each node (from its session profile), after its own graph optimizations.

    Node names are ORT's: fused nodes carry the fusion's name, and ORT adds Memcpy nodes where a
    value crosses between devices.
    """

    nodes_by_provider: dict[str, list[str]] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)  # node name -> op type

    def counts(self) -> dict[str, int]:
        return {provider: len(nodes) for provider, nodes in self.nodes_by_provider.items()}

    def cpu_nodes_while_cuda_asked(self, provider_requested: str) -> list[str]:
        """Nodes on CPU (ORT's copies left out) in a session that was asked to run on CUDA."""
        if provider_requested.lower() != "cuda" or CUDA_PROVIDER not in self.nodes_by_provider:
            return []
        return [name for name in self.nodes_by_provider.get(CPU_PROVIDER, [])
                if self.op_types.get(name) not in COPY_OP_TYPES]

    def summary(self, provider_requested: str) -> str:
        """One sentence: how many nodes ran where, and the nodes on CPU when CUDA was asked."""
        if not self.nodes_by_provider:
            return "Node placement: no node ran (ORT's profile had no node events)."
        counts = ", ".join(f"{count} on {provider}" for provider, count in self.counts().items())
        text = f"Node placement: {counts}."
        on_cpu = self.cpu_nodes_while_cuda_asked(provider_requested)
        if on_cpu:
            named = ", ".join(f"{name} ({self.op_types.get(name, '?')})" for name in on_cpu[:MAX_NODES_NAMED])
            more = f" and {len(on_cpu) - MAX_NODES_NAMED} more" if len(on_cpu) > MAX_NODES_NAMED else ""
            text += (f" {len(on_cpu)} node(s) ran on CPU although CUDA was asked (no CUDA kernel, or shape "
                     f"arithmetic ORT keeps on CPU): {named}{more}.")
        return text

    def to_json(self, provider_requested: str) -> dict[str, Any]:
        on_cpu = self.cpu_nodes_while_cuda_asked(provider_requested)
        return {"counts": self.counts(), "nodes": {p: list(n) for p, n in self.nodes_by_provider.items()},
                "op_types": dict(self.op_types), "cpu_nodes_while_cuda_asked": on_cpu,
                "cpu_fallback": bool(on_cpu)}


def legacy_source_keys(node: str | None, kind: str) -> dict[str, str]:
    """The names the `--json` contract gave ``source_node``/``source_kind`` before they held FX nodes
    too: still written for one release, so a reader of the old names keeps working."""
    return {**({} if node is None else {"torchscript_node": node}), "torchscript_kind": kind}


@dataclass
class NodeError:
    """How far one ONNX node's output is from its source-graph counterpart's (a TorchScript node or an
    FX node: ``source_node`` is its id, ``source_kind`` its op)."""

    onnx_node: str
    onnx_kind: str
    output: str
    source_node: str
    source_kind: str
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
            "source_node": self.source_node, "source_kind": self.source_kind,
            **legacy_source_keys(self.source_node, self.source_kind),
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
    skipped_not_tensor: int = 0  # matched values where one side is a sequence (a list of tensors), not a tensor
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
    run_labels: list[str] = field(default_factory=list)  # per run: "example inputs", "batch=3, len=12", ...
    node_analysis: NodeAnalysis | None = None
    messages: list[str] = field(default_factory=list)
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    precision: str = "strict"  # "strict" or "deployed" (core/onnx_io/cuda_precision.py)
    provider_options: dict[str, str] = field(default_factory=dict)  # set on the CUDA provider; {} on CPU
    torch_device: str = "cpu"  # where the torch reference ran
    tolerance_name: str = "default"
    tolerance_reason: str = ""
    placement: NodePlacement | None = None
    # one sentence per input the export does not follow (dropped, or its values baked): never a PASS
    baked_inputs: list[str] = field(default_factory=list)
    cost: RuntimeCost | None = None  # the compared model's size, node count and median latency
    # a generative checkpoint: greedy decoding through its prefill and decode against torch's
    generation: GenerationCheck | None = None
    export_dtype: ExportDtype | None = None  # a checkpoint folder: the dtype exported and how providers run it
    # steps done without because Fixport's own code raised there: bugs to report, never notes
    internal_errors: list[InternalError] = field(default_factory=list)
    # --optimize: the export as deployed (ONNX Runtime levels, post-export optimizers) against torch
    optimizers: OptimizerReport | None = None

    @property
    def passed(self) -> bool:
        generated = self.generation is None or self.generation.passed or bool(self.generation.note)
        return (bool(self.outputs) and all(output.passed for output in self.outputs) and not self.baked_inputs
                and generated)

    def precision_summary(self) -> str:
        """One sentence: the mode, the provider options set, where torch ran and the tolerance table."""
        cuda = CUDA_PROVIDER in self.providers_used
        options = ", ".join(f"{name}={value}" for name, value in self.provider_options.items())
        if OPENVINO_NAME in self.providers_used:  # the hint Fixport set, and what OpenVINO computes in
            settings = f"OpenVINO, {options}"
        elif cuda:
            settings = f"CUDA options {options}" if options else "the CUDA provider's defaults (TF32 on)"
        else:
            settings = "CPU provider (no precision options)"
        text = f"Precision {self.precision}: {settings}; torch reference on {self.torch_device}; " \
               f"tolerances: {self.tolerance_name}"
        return text + (f" ({self.tolerance_reason})" if self.tolerance_reason else "") + "."

    def to_json(self) -> dict[str, Any]:
        """The `compare --json` contract."""
        analysis = self.node_analysis
        first = analysis.first_divergent if analysis else None
        return {
            "model": self.model_path, "onnx_source": self.onnx_source,
            "provider_requested": self.provider_requested, "providers_used": self.providers_used,
            "messages": self.messages, "runs": self.runs, "pass": self.passed, "baked_inputs": self.baked_inputs,
            "outputs": [output.to_json() for output in self.outputs],
            "input_sets": [{"label": label, "pass": all(s.passed for s in stats),
                            "problems": [s.problem for s in stats if s.problem]}
                           for label, stats in zip(self.run_labels, self.per_run)],
            "generation": self.generation.to_json() if self.generation else None,
            "export_dtype": self.export_dtype.to_json() if self.export_dtype else None,
            "first_divergent": None if first is None else {
                "onnx_node": first.onnx_node, "source_kind": first.source_kind,
                **legacy_source_keys(None, first.source_kind), "scope": first.scope,
                "source": first.source, "template": first.template, "max_abs": first.to_json()["max_abs"],
                "introduced_max_abs": first.to_json()["introduced_max_abs"], "run": analysis.run},
            "nodes": [node.to_json() for node in analysis.nodes] if analysis else [],
            "tolerances": {dtype: list(pair) for dtype, pair in self.tolerances.items()},
            "seconds": {name: round(value, 3) for name, value in self.seconds.items()},
            "precision": {"mode": self.precision, "provider_options": dict(self.provider_options),
                          "torch_device": self.torch_device, "tolerance_table": self.tolerance_name,
                          "tolerance_reason": self.tolerance_reason, "summary": self.precision_summary()},
            "placement": None if self.placement is None else self.placement.to_json(self.provider_requested),
            "cost": None if self.cost is None else self.cost.to_json(),
            "internal_errors": [error.to_json() for error in self.internal_errors],
            "optimizers": None if self.optimizers is None else self.optimizers.to_json(),
        }
