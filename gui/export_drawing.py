"""What the graph panes draw of an export while it runs: the traced graph before the export ends,
the ONNX graph before ONNX Runtime's check, an .onnx file's graph before the worker's check, and
then the analysis, reusing a drawing that already shows its graph."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ExportedGraph, TracedGraph
from fixport.core.session import events
from fixport.core.session.session import Session
from fixport.core.words.graph import Graph
from fixport.gui.graph_panes import ONNX_FILE_NO_SOURCE, SideBySideGraphs
from fixport.gui.job_runner import SubmittedJob


class ExportDrawing:
    """The panes' drawing of one export, from its partial pieces to its analysis."""

    def __init__(self, graphs: SideBySideGraphs, session: Session, status: Callable[[str], None]) -> None:
        self.graphs, self.session, self.status = graphs, session, status
        self.previewed_onnx: str | None = None  # the .onnx file drawn before its analysis arrived
        self.traced: Graph | None = None  # the running export's traced graph, drawn before it ends
        self.exported: Graph | None = None  # its ONNX graph, drawn while ONNX Runtime checks it

    def export_started(self) -> None:
        self.traced = self.exported = None

    def partial(self, submitted: SubmittedJob, piece: object) -> None:
        """The traced graph arrives before the export ends, the ONNX graph before ONNX Runtime's
        check and the comparison with torch: draw each at once."""
        if not isinstance(submitted.request, AnalyzeRequest):
            return
        keep_view = self.session.keep_view
        if isinstance(piece, ExportedGraph):
            self.exported = piece.graph
            traced = self.traced or self.graphs.graphs["source"]
            self.graphs.set_graphs(traced, piece.graph, keep_view=keep_view,
                                   onnx_title="ONNX (exported; checking it in ONNX Runtime…)")
            self.graphs.pane("source").set_marks(unsupported=set())
            created = {n.id for n in piece.graph.nodes if self.session.highlight_after_export & set(n.origin)}
            self.graphs.pane("onnx").set_marks(unsupported=set(), highlighted=created)
        if isinstance(piece, TracedGraph):
            shown = self.graphs.graphs["source"]
            if same_nodes(shown, piece.graph):  # a re-export traced the same graph: keep the drawing
                self.traced = shown
                return
            self.traced = piece.graph
            self.graphs.show_traced(piece.graph, keep_view=keep_view)

    def preview_ready(self, path: str, graph: Graph) -> None:
        """An .onnx file's graph, read in this process: draw it while the worker checks the file."""
        workbench = self.session.workbench
        project, analysis = workbench.project, workbench.analysis
        if project is None or Path(project.model_path) != Path(path) or (
                analysis is not None and Path(analysis.model_path) == Path(path)):
            return  # another file was opened meanwhile, or the worker was faster
        self.previewed_onnx = path
        self.graphs.set_graphs(None, graph, keep_view=False, onnx_title="ONNX (file)", no_source=ONNX_FILE_NO_SOURCE)
        self.status(f"{Path(path).name}: {len(graph.nodes):,} nodes; checking every node in ONNX Runtime…")

    def analysis_arrived(self, event: events.AnalysisArrived) -> None:
        """The analysed graphs, their problems marked (a drawing already showing them is kept)."""
        result = event.result
        onnx_nodes = result.onnx_graph.nodes if result.onnx_graph is not None else []
        placeholders = result.source_kind != "onnx" and any(node.unsupported for node in onnx_nodes)
        title = "ONNX (placeholders where export fails)" if placeholders else "ONNX (exported)"
        previewed = self.previewed_onnx is not None and Path(self.previewed_onnx) == Path(result.model_path)
        if result.source_kind == "onnx" and previewed:
            self.graphs.adopt_graphs(None, result.onnx_graph, onnx_title="ONNX (file)")
        else:
            traced = self.traced if same_nodes(self.traced, result.source_graph) else result.source_graph
            exported = self.exported if same_drawing(self.exported, result.onnx_graph) else result.onnx_graph
            self.graphs.set_graphs(traced, exported, keep_view=event.keep_view, onnx_title=title)
        self.graphs.pane("source").set_marks(unsupported={p.instance for p in result.unsupported})
        if result.onnx_graph is not None:
            bad = {n.id for n in result.onnx_graph.nodes if n.unsupported}
            self.graphs.pane("onnx").set_marks(unsupported=bad, highlighted=set(event.highlighted))


def same_drawing(drawn: Graph | None, analysed: Graph | None) -> bool:
    """Whether the ONNX graph drawn early is the analysed one, flags included (a runtime error marks a node)."""
    return drawn is not None and analysed is not None and (
        [(n.id, n.kind, n.unsupported) for n in drawn.nodes] == [(n.id, n.kind, n.unsupported) for n in analysed.nodes])


def same_nodes(drawn: Graph | None, analysed: Graph | None) -> bool:
    """Whether the graph already drawn is the analysed one (same nodes), so it needs no new layout."""
    return drawn is not None and analysed is not None and [n.id for n in drawn.nodes] == [n.id for n in analysed.nodes]
