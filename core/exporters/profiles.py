"""Each exporter's torch-free face: what the window, the command line and the fix-script writer
need to know of it, without importing torch.

An exporter is one :class:`ExporterProfile` here plus one class implementing
:class:`fixport.core.exporters.base.Exporter` (named by ``implementation``, imported in the worker
only). Nothing outside ``core/exporters/`` asks an exporter's name: it asks the profile (or, in
the worker, the exporter object) for what it needs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fixport.core.project.capture_settings import CAPTURE_SETTINGS
from fixport.core.words.errors import ExportError
from fixport.core.words.graph import GraphKind
from fixport.core.words.vocabulary import DEFAULT_EXPORTER, DEFAULT_OPSET, DYNAMO_DECOMPOSITION_FAMILY, EXPORTERS

if TYPE_CHECKING:
    from fixport.symbolics.library import TemplateLibrary


def _names_no_kind(kind: str) -> bool:
    return False


def names_op_overload(kind: str) -> bool:
    """Whether ``kind`` names an op overload of an FX graph ('aten::pow.Tensor_Scalar');
    TorchScript kinds carry no overload ('aten::pow')."""
    namespace, sep, rest = kind.partition("::")
    return bool(sep) and "." in rest and not namespace.startswith("torch.export")


def _torchscript_library() -> TemplateLibrary:
    from fixport.symbolics.library import TemplateLibrary

    return TemplateLibrary()


def _dynamo_library() -> TemplateLibrary:
    from fixport.symbolics.dynamo.library import dynamo_library

    return dynamo_library()


@dataclass(frozen=True)
class SourceGraphWords:
    """How the window speaks of an exporter's source graph (the left pane) and its nodes."""

    kind: GraphKind  # the Graph.kind its loader gives the graph
    pane_title: str  # the left pane's header: "TorchScript graph (traced)"
    in_progress: str  # the left pane's header while the graph is made: "TorchScript graph — tracing…"
    nodes: str  # its nodes, as an ONNX node's origin names them: "TorchScript nodes"
    node_id: str = ""  # what a node's id is, for the Inspector; '' where the id is the node's name, shown already
    # What torch converts an op kind with, where the worker says at which opsets (the Inspector lists
    # them); '' where it does not say
    builtin_conversion: str = ""


@dataclass(frozen=True)
class ExporterProfile:
    """What is known of one exporter without torch."""

    name: str  # the value of ExportOptions.exporter and of --exporter
    title: str  # for people: the toolbar's tooltip, help texts
    source_graph_title: str  # the left pane's graph: "TorchScript", "FX (torch.export)"
    implementation: str  # "module:Class" of its Exporter, imported in the worker only
    fix_script_part: str  # its part of the fix script (a module the script carries whole): export_with_fixes(job)
    stub_calls: str  # what a schema stub's body is written in, for the Template dock's hint
    make_library: Callable[[], TemplateLibrary]  # its template library (torch-free)
    source_graph: SourceGraphWords  # how the window names its source graph
    # Whether an op kind is spelled only this exporter's way (an FX op overload, 'aten::pow.Tensor_Scalar')
    recognises_kind: Callable[[str], bool] = _names_no_kind
    # The opset it exports at where neither the user nor the model file asks one; None: torch.onnx's
    # own default for this exporter, which only the worker (with torch) reads.
    default_opset: int | None = DEFAULT_OPSET
    # torch's capture settings it takes (core.project.capture_settings), in the order fix --auto tries them
    capture_settings: tuple[str, ...] = ()
    # The opsets it exports at, lowest and highest (torch's own limits for it; checked against torch
    # by tests/test_torch_seams.py)
    opsets: tuple[int, int] = (7, 20)
    # Whether its Exporter keeps process-global state between exports (Exporter.process_state)
    keeps_process_state: bool = False
    # Whether its capture is a trace that warns (TracerWarning) of each value it bakes into a constant:
    # then only a read it warns of bakes an input (torch.export warns of none)
    warns_of_baked_values: bool = False
    # What else to try for an input whose values the export does not follow ('' where nothing but the
    # model's code can change it)
    baked_input_remedy: str = ""
    # Template families whose fixes the exporter registers for the op they replace (a decomposition
    # written in torch ops), not for the op they are fitted to
    replacing_families: frozenset[str] = frozenset()

    def registered_kind(self, family: str | None, target_kind: str, replaced_kind: str) -> str:
        """The op this exporter registers a fix of ``family`` for (the fix script's table says it)."""
        return replaced_kind if family in self.replacing_families else target_kind

    def template_library(self) -> TemplateLibrary:
        return self.make_library()


TORCHSCRIPT = ExporterProfile(
    name="torchscript",
    title="torch.onnx.export(dynamo=False): the TorchScript exporter",
    source_graph_title="TorchScript",
    implementation="fixport.core.exporters.torchscript.exporter:TorchScriptExporter",
    fix_script_part="fixport.core.exporters.torchscript.script_part",
    stub_calls="g.op(...) calls",
    make_library=_torchscript_library,
    keeps_process_state=True,
    warns_of_baked_values=True,
    baked_input_remedy=("Try the dynamo exporter (--exporter dynamo): torch.export keeps values read with .item() or "
                        ".tolist() symbolic, and names a branch on them as a capture failure"),
    source_graph=SourceGraphWords(kind="torchscript", pane_title="TorchScript graph (traced)",
                                  in_progress="TorchScript graph — tracing…", nodes="TorchScript nodes",
                                  node_id="instance key", builtin_conversion="built-in symbolic"),
)

DYNAMO = ExporterProfile(
    name="dynamo",
    title="torch.onnx.export(dynamo=True): the torch.export-based exporter, FX graph on the left",
    source_graph_title="FX (torch.export)",
    implementation="fixport.core.exporters.dynamo.exporter:DynamoExporter",
    fix_script_part="fixport.core.exporters.dynamo.script_part",
    stub_calls="op.Xxx(...) calls (onnxscript, opset 18)",
    make_library=_dynamo_library,
    source_graph=SourceGraphWords(kind="fx", pane_title="FX graph (torch.export)",
                                  in_progress="FX graph — capturing (torch.export)…", nodes="FX nodes"),
    recognises_kind=names_op_overload,
    default_opset=None,
    capture_settings=tuple(CAPTURE_SETTINGS),
    opsets=(7, 23),
    replacing_families=frozenset({DYNAMO_DECOMPOSITION_FAMILY}),
)

PROFILES: dict[str, ExporterProfile] = {profile.name: profile for profile in (TORCHSCRIPT, DYNAMO)}
assert tuple(PROFILES) == EXPORTERS, "vocabulary.EXPORTERS lists the profiles' names, in order"
assert len({profile.source_graph.kind for profile in PROFILES.values()}) == len(PROFILES), \
    "each exporter's source graph has a kind of its own: the window names a graph by its kind"


def profile_for(name: str | None) -> ExporterProfile:
    """The profile of exporter ``name`` (the default exporter for None or '')."""
    try:
        return PROFILES[name or DEFAULT_EXPORTER]
    except KeyError:
        raise ExportError(f"Unknown exporter {name!r}.", f"Choose one of {', '.join(PROFILES)}.") from None


def profile_for_graph(graph_kind: str) -> ExporterProfile | None:
    """The exporter whose source graph is of ``graph_kind``; None for the ONNX graph."""
    return next((profile for profile in PROFILES.values() if profile.source_graph.kind == graph_kind), None)


def profile_for_kind(kind: str) -> ExporterProfile:
    """The exporter whose graphs spell op kinds like ``kind``; the default exporter when any could."""
    return next((profile for profile in PROFILES.values() if profile.recognises_kind(kind)), profile_for(None))


def opsets_text() -> str:
    """Every exporter's opset range, for help texts: 'torchscript 7-20, dynamo 7-23'."""
    return ", ".join(f"{name} {profile.opsets[0]}-{profile.opsets[1]}" for name, profile in PROFILES.items())
