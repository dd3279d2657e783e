"""What the session tells its views, as small records: one class per thing that happened."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixport.core.exporters.profiles import ExporterProfile
from fixport.core.foundation.errors import FixportError
from fixport.core.onnx_io.op_docs import OpInfo
from fixport.core.project.project import FixMapping
from fixport.core.records.compare_result import CompareResult
from fixport.core.records.results import AnalysisResult, DimVerdict, WorkerInfo
from fixport.core.session.fix_all import FixAllPlan, FixedKind
from fixport.core.session.targets import TemplateTarget
from fixport.core.words.graph import Graph, Node
from fixport.core.words.problems import UnsupportedNode


@dataclass(frozen=True)
class Opened:
    """A model or project was opened; its export starts next."""

    path: Path
    model_path: Path
    newer_autosave: Path | None  # an autosave with unsaved edits the user may restore


@dataclass(frozen=True)
class ExportStarted:
    """An export of the project as it stands was submitted."""

    keep_view: bool


@dataclass(frozen=True)
class AnalysisArrived:
    """The export's analysis: graphs, problems, and what the last Fix all chose per kind."""

    result: AnalysisResult
    keep_view: bool
    highlighted: frozenset[str]  # ONNX nodes made by the fix just applied
    fixed: list[str]  # labels of the project's mappings
    outcomes: list[FixedKind] | None


@dataclass(frozen=True)
class NodeSelected:
    """A node is selected; ``source_instance`` is its source-graph node (itself, or its origin)."""

    kind: str
    node_id: str
    source_instance: str | None
    from_pane: bool  # the user clicked it there: the panes show it already


@dataclass(frozen=True)
class SelectionCleared:
    """The selected node is gone (a fix replaced it): the docks describe nothing."""


@dataclass(frozen=True)
class TargetChanged:
    """The node the Template dock offers fixes for (None: none), with the project's fix for it."""

    target: TemplateTarget | None
    mapping: FixMapping | None = None


@dataclass(frozen=True)
class OffersSynthesized:
    """Generated fixes for the target's kind (the worker made them; cached per kind, opset, exporter)."""

    kind: str
    offers: list


@dataclass(frozen=True)
class FixOffersFound:
    """The new kinds of fix for the problem at ``instance`` (``fixport.core.records.fix_offers``)."""

    instance: str
    offers: list


@dataclass(frozen=True)
class NodeShown:
    """What the Inspector shows for the selected node."""

    graph: Graph
    node: Node
    has_source_node: bool
    problem: UnsupportedNode | None
    op_info: OpInfo | None
    opset: int
    baked: Any = None
    exporter: ExporterProfile | None = None  # the exporter whose graphs are shown: it names them


@dataclass(frozen=True)
class ProblemShown:
    """A problem with no node to select (a capture failure, the export's own)."""

    problem: UnsupportedNode


@dataclass(frozen=True)
class ProjectEdited:
    """The project changed (fixes, options, inputs); it was autosaved once."""

    what: str


@dataclass(frozen=True)
class ProjectSaved:
    """The project was saved to ``path`` (its autosave, now stale, was removed)."""

    path: Path


@dataclass(frozen=True)
class AutosaveDiscarded:
    """The user turned down the autosave's unsaved edits; its file is gone."""


@dataclass(frozen=True)
class FixAllApplied:
    """Fix all's result is in the project (one autosave); its analysis follows."""

    plan: FixAllPlan


@dataclass(frozen=True)
class CompareArrived:
    result: CompareResult


@dataclass(frozen=True)
class StubReady:
    source: str


@dataclass(frozen=True)
class DimsSuggested:
    verdicts: list[DimVerdict]


@dataclass(frozen=True)
class WorkerReady:
    info: WorkerInfo


@dataclass(frozen=True)
class Logged:
    """A line for the Log (details folded under it)."""

    text: str
    details: str = ""


@dataclass(frozen=True)
class ErrorRaised:
    """Something the user asked for cannot be done; the message says what to do."""

    error: FixportError
