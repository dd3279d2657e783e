"""The Compare exporters dock: both exports side by side, against torch and against each other.

Report: three tables: each exporter (status, what it needed, size, node count, latency, where it
first leaves torch), each output of the two exports against each other, and every value the two
link to the same source line, the ones that differ first. Clicking a value's row selects its node
in both exports' graphs and asks the window to select it too (in the export the graph panes show:
gui/compare_exporters.py).

Both ONNX graphs: the two exports side by side, linked through the source (the aligned values):
selecting a node in one selects its counterpart in the other; the values that differ are marked
in both, the first difference as the first divergent node.
"""
from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from fixport.core.records.exporter_comparison import AlignedNode, ExporterComparison, ExporterRun
from fixport.core.words.graph import display_graph
from fixport.gui.graph_panes import HEADER_STYLE
from fixport.gui.graph_style import FAIL_COLOUR, PASS_COLOUR
from fixport.gui.graph_view import GraphPane

EXPORTER_COLUMNS = ("exporter", "result", "opset", "problems", "fixes", "size", "nodes", "latency",
                    "first leaves torch at")
OUTPUT_COLUMNS = ("output", "shape", "max abs between", "max rel between", "result")
NODE_ROLE = Qt.ItemDataRole.UserRole


def _number(value: float | None) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3g}"


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    return table


def _fill_row(table: QTableWidget, row: int, cells: list[str], colour: str | None = None,
              tips: list[str] | None = None) -> None:
    for column, text in enumerate(cells):
        item = QTableWidgetItem(text)
        if tips and tips[column]:
            item.setToolTip(tips[column])
        if colour is not None:
            item.setForeground(QColor(colour))
        table.setItem(row, column, item)


class ExporterComparisonDock(QDockWidget):
    """Run ▸ Compare exporters' report."""

    node_picked = Signal(object)  # the AlignedNode of the clicked row

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Compare exporters", parent)
        self.setObjectName("ExporterComparisonDock")
        self.result: ExporterComparison | None = None
        self._nodes: list[AlignedNode] = []
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        self.summary = QLabel("Run ▸ Compare exporters exports the model with both exporters and compares them.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        self.exporters_table = _table(EXPORTER_COLUMNS)
        self.outputs_table = _table(OUTPUT_COLUMNS)
        self.nodes_table = _table(())
        self.nodes_table.cellClicked.connect(self._on_node_row_clicked)
        splitter = QSplitter(Qt.Orientation.Vertical)
        for table in (self.exporters_table, self.outputs_table, self.nodes_table):
            splitter.addWidget(table)
        rows = self.exporters_table.verticalHeader().defaultSectionSize()
        # both exporters' rows always in view; the values table takes what is left
        self.exporters_table.setMinimumHeight(3 * rows + self.exporters_table.horizontalScrollBar().sizeHint().height())
        for index, stretch in enumerate((0, 1, 3)):
            splitter.setStretchFactor(index, stretch)
        self.tabs = QTabWidget()
        self.tabs.addTab(splitter, "Report")
        self.graph_panes: list[GraphPane] = []
        self._graph_headers: list[QLabel] = []
        graphs = QSplitter(Qt.Orientation.Horizontal)
        for side in range(2):
            holder = QWidget()
            column = QVBoxLayout(holder)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(0)
            header = QLabel()
            header.setStyleSheet(HEADER_STYLE)
            pane = GraphPane()
            pane.node_clicked.connect(lambda node_id, side=side: self._on_graph_node_clicked(side, node_id))
            column.addWidget(header)
            column.addWidget(pane, 1)
            graphs.addWidget(holder)
            self.graph_panes.append(pane)
            self._graph_headers.append(header)
        self.tabs.addTab(graphs, "Both ONNX graphs")
        layout.addWidget(self.tabs, 1)
        self.setWidget(body)

    def show_result(self, result: ExporterComparison) -> None:
        self.result = result
        colour = PASS_COLOUR if result.agree else FAIL_COLOUR
        notes = "".join(f"<br><small>{html.escape(message)}</small>" for message in result.messages)
        self.summary.setText(f"<b style='color:{colour}'>{html.escape(result.verdict())}</b>{notes}")
        self._fill_exporters(result.runs)
        self._fill_outputs(result)
        self._fill_nodes(result)
        self._show_graphs(result)

    def _show_graphs(self, result: ExporterComparison) -> None:
        """Each export's compared graph in its pane, the values that differ marked in both."""
        first = result.first_difference
        for pane, header, run in zip(self.graph_panes, self._graph_headers, result.runs):
            if run.onnx_graph is None:
                pane.clear()
                header.setText(f"{run.exporter}: no graph ({run.error or 'not compared node by node'})")
                continue
            header.setText(f"{run.exporter} — {len(run.onnx_graph.nodes)} nodes, as compared (no constant folding)")
            pane.set_graph(display_graph(run.onnx_graph))
            errors = {node.onnx_nodes[run.exporter]: node.max_abs or 0.0 for node in result.nodes if node.differ}
            pane.set_marks(errors=errors, first_divergent=first.onnx_nodes[run.exporter] if first else None)

    def select_in_graphs(self, node: AlignedNode) -> None:
        """Select the value's node in both exports' graphs."""
        if self.result is None:
            return
        for pane, exporter in zip(self.graph_panes, self.result.exporters):
            pane.select_nodes([node.onnx_nodes[exporter]])

    def _on_graph_node_clicked(self, side: int, node_id: str) -> None:
        """A node of one export: its counterpart selected in the other, where the two share a value."""
        if self.result is None:
            return
        exporter = self.result.exporters[side]
        node = next((node for node in self.result.nodes if node.onnx_nodes[exporter] == node_id), None)
        if node is not None:
            self.select_in_graphs(node)
        else:
            self.graph_panes[side].select_nodes([node_id])

    def _fill_exporters(self, runs: list[ExporterRun]) -> None:
        self.exporters_table.setRowCount(len(runs))
        for row, run in enumerate(runs):
            cost = run.comparison.cost if run.comparison else None
            first = run.first_divergent
            where = "" if first is None else f"{first.onnx_node} ({first.source_kind}"
            where += "" if first is None else (f" at {first.source})" if first.source else ")")
            fixes = ", ".join(run.fixes) or run.fixes_from
            cells = [run.exporter, run.status(), "" if run.opset is None else str(run.opset),
                     str(len(run.problems)), fixes,
                     "" if cost is None else cost.summary().split(", ")[0],
                     "" if cost is None else str(cost.node_count),
                     "" if cost is None or cost.latency_ms is None else f"{cost.latency_ms:.3g} ms",
                     where or ("none" if run.compared else "")]
            tips = ["", f"{run.error} {run.hint}".strip(), "", "\n".join(run.problems),
                    f"from {run.fixes_from}", "", "", "" if cost is None else cost.summary(), ""]
            _fill_row(self.exporters_table, row, cells, PASS_COLOUR if run.passed else FAIL_COLOUR, tips)
        self.exporters_table.resizeColumnsToContents()

    def _fill_outputs(self, result: ExporterComparison) -> None:
        self.outputs_table.setRowCount(len(result.outputs))
        for row, output in enumerate(result.outputs):
            names = " / ".join(dict.fromkeys(output.names.values())) or f"#{output.index}"
            verdict = "same" if output.within_tolerance else "DIFFER" + (f" ({output.note})" if output.note else "")
            cells = [names, "x".join(map(str, output.shape)) or "scalar", _number(output.max_abs),
                     _number(output.max_rel), verdict]
            _fill_row(self.outputs_table, row, cells, PASS_COLOUR if output.within_tolerance else FAIL_COLOUR)
        self.outputs_table.resizeColumnsToContents()

    def _fill_nodes(self, result: ExporterComparison) -> None:
        first, second = result.exporters
        columns = ("place", f"{first} node", f"{second} node", f"{first} vs torch", f"{second} vs torch",
                   "between")
        self.nodes_table.setColumnCount(len(columns))
        self.nodes_table.setHorizontalHeaderLabels(columns)
        self._nodes = sorted(result.nodes, key=lambda node: not node.differ)  # stable: each part in graph order
        self.nodes_table.setRowCount(len(self._nodes))
        for row, node in enumerate(self._nodes):
            cells = [node.place, f"{node.onnx_nodes[first]} ({node.onnx_kinds[first]})",
                     f"{node.onnx_nodes[second]} ({node.onnx_kinds[second]})", _number(node.vs_torch[first]),
                     _number(node.vs_torch[second]), _number(node.max_abs)]
            _fill_row(self.nodes_table, row, cells, FAIL_COLOUR if node.differ else None)
        self.nodes_table.resizeColumnsToContents()

    def differing_rows(self) -> list[int]:
        """The rows of the values the two exports differ on (they come first)."""
        return [row for row, node in enumerate(self._nodes) if node.differ]

    def _on_node_row_clicked(self, row: int, _column: int) -> None:
        if 0 <= row < len(self._nodes):
            self.select_in_graphs(self._nodes[row])
            self.node_picked.emit(self._nodes[row])
