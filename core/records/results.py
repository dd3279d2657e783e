"""What worker jobs return across the process boundary (no torch import)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixport.core.project.export_options import ExportOptions, resolve_export_options
from fixport.core.project.inputs import InputOptions
from fixport.core.project.model_files import CHECKPOINT_CONFIG_FILE, existing_model_path
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import AutoFixChoice, GraphRewrite
from fixport.core.records.fix_records import RejectedCandidate
from fixport.core.records.generation_result import GenerationCheck
from fixport.core.records.runtime_cost import RuntimeCost
from fixport.core.words.errors import WorkerCrashed
from fixport.core.words.export_dtype import ExportDtype
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason


@dataclass
class ModelRequest:
    """Which model to open and how: the same request always hits the worker's cache."""

    path: str
    inputs: InputOptions = field(default_factory=InputOptions)
    trust: bool = False
    search_paths: list[str] = field(default_factory=list)
    # A checkpoint folder only: the task (None: from its config's architectures) and the component to
    # export (None: the first one transformers' exporter decomposes it into).
    task: str | None = None
    component: str | None = None
    dtype: str | None = None  # a checkpoint folder's export dtype (None or "auto": the checkpoint's own)

    def cache_key(self) -> tuple:
        path = existing_model_path(self.path)
        stat = (path / CHECKPOINT_CONFIG_FILE if path.is_dir() else path).stat()
        specs = tuple(spec.text() for spec in self.inputs.specs)
        return (str(Path(self.path).resolve()), stat.st_mtime_ns, stat.st_size, specs,
                self.inputs.input_file, self.inputs.seed, self.trust, tuple(self.search_paths),
                self.task, self.component, self.dtype or None)


@dataclass
class AnalysisResult:
    """What the GUI and the CLI show after one diagnosed export."""

    model_path: str
    source_kind: str
    options: ExportOptions
    source_graph: Graph | None
    onnx_graph: Graph | None
    unsupported: list[UnsupportedNode]
    input_names: list[str]
    input_shapes: list[tuple[int, ...]]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    saved_files: list[str] = field(default_factory=list)
    output_max_abs: float | None = None  # ONNX Runtime against torch on the example inputs, when compared
    runtime: str = "ort"  # where the outputs were compared: "ort", or "openvino" (check --runtime openvino)
    other_sizes_checked: list[str] = field(default_factory=list)  # e.g. "batch=3, len=12": where it also matched
    # the dims that vary between build()'s input sets, as --dynamic-shapes JSON (None: one set given)
    proposed_dynamic_shapes: dict[str, Any] | None = None
    cost: RuntimeCost | None = None  # size, node count and latency, when asked and ONNX Runtime runs the export
    # A checkpoint folder: its task, the component this analysis exported, and all of them.
    task: str = ""
    component: str = ""
    components: list[str] = field(default_factory=list)
    export_dtype: ExportDtype | None = None  # a checkpoint folder: the dtype exported and how providers run it
    generation: GenerationCheck | None = None  # a generative checkpoint: greedy decoding vs torch
    graph_rewrites: list[GraphRewrite] = field(default_factory=list)  # what the fixes' graph rewrites changed

    @classmethod
    def of_crash(cls, model_path: str, options: dict[str, Any], crash: WorkerCrashed) -> AnalysisResult:
        """The analysis when the export took the worker down: the crash is the one problem found
        (a bug in torch or in a fix, not a file that cannot be opened)."""
        message = (f"{crash.message} Fixport restarted the worker; the graphs are not available. Export "
                   "at another opset, fix the op that crashes, or report it to PyTorch.")
        problem = UnsupportedNode(kind="(export)", instance="", reason=ProblemReason.WORKER_CRASH, message=message,
                                  scope="", source="")
        return cls(model_path, "python", resolve_export_options({}, options), None, None, [problem], [], [])


@dataclass
class AutoFixResult:
    """What `fix --auto` did: the analyses before and after, and the fixes it chose."""

    before: AnalysisResult
    after: AnalysisResult
    mappings: list[FixMapping] = field(default_factory=list)
    choices: list[AutoFixChoice] = field(default_factory=list)
    no_template: list[str] = field(default_factory=list)
    rejected: list[RejectedCandidate] = field(default_factory=list)  # candidates tried and not kept, and why
    opset_raised: tuple[int, int] | None = None  # (from, to) when no template worked at the asked opset
    whole_model_exports: int = 0  # exports of the whole model the search ran itself (trials not counted)
    node_trials: int = 0  # candidates tried on a failing node alone
    whole_model_trials: int = 0  # candidates tried by exporting the whole model
    whole_model_why: list[str] = field(default_factory=list)  # why some kinds were tried on the whole model
    capture_settings: list[str] = field(default_factory=list)  # torch's capture settings the search chose
    # The export without the fixes and with them, timed when asked (None: not asked, or it does not run)
    cost_before: RuntimeCost | None = None
    cost_after: RuntimeCost | None = None
    stopped_at_time_limit: float | None = None  # the time limit (s) that stopped the search, when one did
    not_reached: list[str] = field(default_factory=list)  # kinds left that the search did not finish trying
    kept_best: str = ""  # why the search went back to an earlier state it had verified (its last was worse)

    @property
    def changed(self) -> bool:
        return bool(self.mappings)

    def option_edits(self, options: Mapping[str, Any], *, pin_opset: bool) -> dict[str, Any]:
        """The export options the fixes were chosen under, as edits to ``options`` (the one rule for
        Fix all, `fix --auto`, sweep rows and `compare --exporters`): the opset when the search raised
        it, and the capture settings it chose. ``pin_opset`` also records the opset the search exported
        at when ``options`` name none (a saved project file reproduces the export; the window's project
        keeps following the exporter's default until the user picks one)."""
        edits: dict[str, Any] = {}
        if self.opset_raised is not None or (pin_opset and "opset" not in options):
            edits["opset"] = self.after.options.opset
        if self.capture_settings:  # what the export needs to be reproduced, as the opset
            edits["capture_settings"] = list(self.after.options.capture_settings)
        return edits


@dataclass
class DimVerdict:
    """Whether one input dim, declared dynamic, still exports right at other sizes, and if not why."""

    input_name: str
    axis: int
    traced_size: int
    generalises: bool | None  # None: could not tell (torch refuses other sizes, or the export has problems)
    why: str = ""  # what blocks it, or why it could not be told
    source: str = ""  # the user's line that blocks it, when known

    @property
    def label(self) -> str:
        return f"{self.input_name}[{self.axis}] (traced {self.traced_size})"


@dataclass
class WorkerInfo:
    """What a warm worker reports about itself."""

    pid: int
    torch: str
    onnx: str
    onnxruntime: str
    threads: int
    providers: list[str] = field(default_factory=list)  # ONNX Runtime's execution providers here


@dataclass
class TracedGraph:
    """An early piece of an analysis: the traced TorchScript graph, sent before the export ends."""

    graph: Graph


@dataclass
class ExportedGraph:
    """An early piece of an analysis: the exported ONNX graph, sent when it converted cleanly and
    ONNX Runtime's check and the comparison with torch are still to come."""

    graph: Graph
