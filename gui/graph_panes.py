"""The two graph panes side by side, kept in sync through the provenance mapping."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from fixport.core.exporters.profiles import ExporterProfile, profile_for_graph
from fixport.core.words.graph import Graph, GraphMapping, GraphSide, display_graph
from fixport.gui.graph_view import GraphPane

HEADER_STYLE = "font-weight: 600; padding: 3px 6px; background: #eceff1; border-bottom: 1px solid #cfd8dc;"


NO_SOURCE_GRAPH = "the model was not traced or captured: see the message below"
ONNX_FILE_NO_SOURCE = "an ONNX file carries only its ONNX graph"
SIDES: tuple[GraphSide, ...] = ("source", "onnx")
SOURCE_TITLE = "Source graph"  # the left pane's header until a graph says whose it is

class _TitledPane(QWidget):
    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.header = QLabel(title)
        self.header.setStyleSheet(HEADER_STYLE)
        self.pane = GraphPane()
        layout.addWidget(self.header)
        layout.addWidget(self.pane, 1)


class SideBySideGraphs(QSplitter):
    """The source graph on the left, the ONNX graph on the right; selecting one selects its counterparts.
    The left pane's words come from the profile of the exporter whose graph it shows."""

    node_selected = Signal(str, str)  # the side ("source" | "onnx"), node id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.left = _TitledPane(SOURCE_TITLE)
        self.right = _TitledPane("ONNX (exported)")
        self.addWidget(self.left)
        self.addWidget(self.right)
        self.left.pane.view.setObjectName("source")
        self.right.pane.view.setObjectName("onnx")
        self.mapping = GraphMapping()
        self.graphs: dict[str, Graph | None] = {"source": None, "onnx": None}
        self.no_source = NO_SOURCE_GRAPH
        self.onnx_title = "ONNX (exported)"  # what the ONNX pane shows, as its header names it
        self.left.pane.node_clicked.connect(lambda node_id: self._on_node_clicked("source", node_id))
        self.right.pane.node_clicked.connect(lambda node_id: self._on_node_clicked("onnx", node_id))

    def pane(self, side: GraphSide) -> GraphPane:
        return self.left.pane if side == "source" else self.right.pane

    def set_graphs(self, source: Graph | None, onnx: Graph | None, *, keep_view: bool,
                   onnx_title: str = "ONNX (exported)", no_source: str = NO_SOURCE_GRAPH) -> None:
        """Show both graphs; ``no_source`` says why there is no source graph, when there is none."""
        self.no_source = no_source
        previous = self.graphs
        self.graphs = {"source": source, "onnx": onnx}
        self.mapping = GraphMapping.from_onnx_graph(onnx) if onnx is not None else GraphMapping()
        for side in SIDES:
            pane, graph = self.pane(side), self.graphs[side]
            if graph is None:
                pane.clear()
            elif graph is not previous[side]:  # the same graph object is on screen already
                pane.set_graph(display_graph(graph), keep_view=keep_view)
        self._update_headers(onnx_title)

    def show_opening(self, onnx_file: bool, exporter: ExporterProfile) -> None:
        """Empty panes while a model opens: ``exporter``'s source graph and export are on their way
        (an ONNX file's graph is read on its own, and it has no source graph)."""
        self.set_graphs(None, None, keep_view=False, no_source=ONNX_FILE_NO_SOURCE if onnx_file else NO_SOURCE_GRAPH)
        if not onnx_file:
            self.left.header.setText(exporter.source_graph.in_progress)
        self.right.header.setText("ONNX — reading…" if onnx_file else "ONNX — exporting…")

    def stop_waiting(self) -> None:
        """The job the panes waited for failed: the headers say what is shown, not what was coming."""
        self._update_headers(self.onnx_title)
        if self.graphs["onnx"] is None:
            self.right.header.setText("ONNX — none")

    def show_traced(self, source: Graph, *, keep_view: bool) -> None:
        """The source graph, before its export ends (the ONNX pane keeps what it shows)."""
        self.graphs = {**self.graphs, "source": source}
        self.pane("source").set_graph(display_graph(source), keep_view=keep_view)
        shown = self.onnx_title  # the ONNX pane still shows the graph this title names
        self._update_headers("ONNX (exporting…)")
        self.onnx_title = shown
        if self.graphs["onnx"] is None:
            self.right.header.setText("ONNX — exporting…")

    def adopt_graphs(self, source: Graph | None, onnx: Graph | None, *, onnx_title: str) -> None:
        """Take analysed graphs that the panes already show (the same file, read twice) without redrawing."""
        self.graphs = {"source": source, "onnx": onnx}
        self.mapping = GraphMapping.from_onnx_graph(onnx) if onnx is not None else GraphMapping()
        self._update_headers(onnx_title)

    def _update_headers(self, onnx_title: str) -> None:
        self.onnx_title = onnx_title
        source, onnx = self.graphs["source"], self.graphs["onnx"]
        if source is None:
            self.left.header.setText(f"{SOURCE_TITLE} — none ({self.no_source})")
        else:
            exporter = profile_for_graph(source.kind)
            title = exporter.source_graph.pane_title if exporter else SOURCE_TITLE
            self.left.header.setText(f"{title} — {len(source.nodes)} nodes")
        if onnx is not None:
            bad = len(onnx.unsupported_nodes())
            flagged = f", ⚠ {bad} unsupported" if bad else ""
            self.right.header.setText(f"{onnx_title} — {len(onnx.nodes)} nodes{flagged}")

    def select(self, side: GraphSide, node_ids: list[str], *, sync: bool = True) -> None:
        """Select nodes in one pane and (with ``sync``) their counterparts in the other."""
        self.pane(side).select_nodes(node_ids, center=True)
        if not sync:
            return
        other: GraphSide = "onnx" if side == "source" else "source"
        counterparts = sorted({c for node_id in node_ids for c in self.mapping.counterparts(side, node_id)})
        graph = self.pane(other).graph
        if graph is not None:
            counterparts = [c for c in counterparts if c in graph.node_by_id]
        self.pane(other).select_nodes(counterparts, center=bool(counterparts))

    def _on_node_clicked(self, side: GraphSide, node_id: str) -> None:
        self.select(side, [node_id])
        self.node_selected.emit(side, node_id)
