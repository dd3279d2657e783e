"""The Compare dock: per-output statistics and pyqtgraph plots of where torch and ONNX differ.

Plots: the error histogram of the selected output, torch-vs-ONNX values (scatter), the max
error of every output, and the per-node error along the graph with the first divergent node
marked — clicking a point there selects that node in the ONNX pane.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fixport.core.model.compare_result import CompareResult
from fixport.core.model.output_stats import OutputStats

PASS_COLOUR = "#2e7d32"
FAIL_COLOUR = "#c62828"
NODE_POINT_COLOUR = "#1565c0"
FIRST_DIVERGENT_COLOUR = "#ff6f00"
TABLE_COLUMNS = ("output", "shape", "dtype", "max abs", "mean abs", "max rel", "RMSE", "cosine", "mismatch", "result")
EPSILON = 1e-30  # plotting error on a log axis
ZERO_BIN_LOG10 = -12.0
TABLE_VISIBLE_ROWS = 4  # where exact matches are drawn when there is no other bin


def _number(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3g}"


class CompareDock(QDockWidget):
    node_picked = Signal(str)  # ONNX node id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Compare", parent)
        self.setObjectName("CompareDock")
        pg.setConfigOptions(antialias=True, background="w", foreground="#333")
        self.result: CompareResult | None = None
        self._node_ids: list[str] = []
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        header = QHBoxLayout()
        self.summary = QLabel("Press Compare (F6) to run torch and ONNX Runtime on the same inputs.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        header.addWidget(self.summary, 1)
        header.addWidget(QLabel("Output:"))
        self.output_choice = QComboBox()
        self.output_choice.currentIndexChanged.connect(self._on_output_changed)
        header.addWidget(self.output_choice)
        layout.addLayout(header)
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(TABLE_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        layout.addWidget(self.table)
        grid = QGridLayout()
        self.histogram = pg.PlotWidget(title="|torch − ONNX| histogram")
        self.histogram.setLabel("bottom", "absolute error (log10)")
        self.histogram.setLabel("left", "elements")
        self.scatter = pg.PlotWidget(title="torch vs ONNX values")
        self.scatter.setLabel("bottom", "torch")
        self.scatter.setLabel("left", "ONNX Runtime")
        self.per_output = pg.PlotWidget(title="max abs error per output")
        self.per_output.setLogMode(y=True)
        self.per_node = pg.PlotWidget(title="per-node max abs error along the graph (click a point)")
        self.per_node.setLogMode(y=True)
        self.per_node.setLabel("bottom", "ONNX node (topological order)")
        for column, plot in enumerate((self.histogram, self.scatter, self.per_output)):
            grid.addWidget(plot, 0, column)
        grid.addWidget(self.per_node, 1, 0, 1, 3)
        self.plots = QWidget()
        self.plots.setLayout(grid)
        self.plots.hide()  # empty axes say nothing: the plots appear with the first result
        layout.addWidget(self.plots, 1)
        self.setWidget(body)

    # ---- public API ----
    def clear(self) -> None:
        self.result = None
        self.summary.setText("Press Compare (F6) to run torch and ONNX Runtime on the same inputs.")
        self.table.setRowCount(0)
        self.plots.hide()
        self.output_choice.blockSignals(True)
        self.output_choice.clear()
        self.output_choice.blockSignals(False)
        for plot in (self.histogram, self.scatter, self.per_output, self.per_node):
            plot.clear()

    def show_result(self, result: CompareResult) -> None:
        self.clear()
        self.result = result
        self.plots.show()
        verdict = (f"<b style='color:{PASS_COLOUR}'>PASS</b>" if result.passed
                   else f"<b style='color:{FAIL_COLOUR}'>FAIL</b>")
        providers = ", ".join(result.providers_used)
        messages = "".join(f"<br><i>{m}</i>" for m in result.messages)
        first = result.node_analysis.first_divergent if result.node_analysis else None
        divergent = (f"<br>First divergent node: <b>{first.onnx_node}</b> ({first.onnx_kind}) from "
                     f"{first.torchscript_kind} {first.scope} {first.source}"
                     + (f", template {first.template}" if first.template else "")) if first else ""
        self.summary.setText(f"{verdict} — {len(result.outputs)} output(s), {result.runs} input set(s), "
                             f"ONNX Runtime on {providers}{divergent}{messages}")
        self._fill_table(result.outputs)
        self.output_choice.blockSignals(True)
        self.output_choice.addItems([o.name for o in result.outputs])
        self.output_choice.blockSignals(False)
        self._plot_output(result.outputs[0] if result.outputs else None)
        self._plot_per_output(result.outputs)
        self._plot_per_node(result)

    def plotted_item_counts(self) -> dict[str, int]:
        """How many data items each plot shows (tests check the plots are not empty)."""
        return {name: len(plot.getPlotItem().listDataItems()) for name, plot in
                (("histogram", self.histogram), ("scatter", self.scatter), ("per_output", self.per_output),
                 ("per_node", self.per_node))}

    # ---- internals ----
    def _fill_table(self, outputs: list[OutputStats]) -> None:
        self.table.setRowCount(len(outputs))
        for row, output in enumerate(outputs):
            values = (output.name, "x".join(map(str, output.shape)), output.dtype, _number(output.max_abs),
                      _number(output.mean_abs), _number(output.max_rel), _number(output.rmse),
                      _number(output.cosine), f"{output.mismatch_fraction:.2%}",
                      "pass" if output.passed else f"FAIL {output.problem}".strip())
            for column, text in enumerate(values):
                item = QTableWidgetItem(text)
                if column == len(values) - 1:
                    item.setForeground(pg.mkColor(PASS_COLOUR if output.passed else FAIL_COLOUR))
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        rows_height = sum(self.table.rowHeight(r) for r in range(min(len(outputs), TABLE_VISIBLE_ROWS)))
        self.table.setFixedHeight(self.table.horizontalHeader().height() + rows_height + 4)

    def _on_output_changed(self, index: int) -> None:
        if self.result is not None and 0 <= index < len(self.result.outputs):
            self._plot_output(self.result.outputs[index])

    def _plot_output(self, output: OutputStats | None) -> None:
        self.histogram.clear()
        self.scatter.clear()
        if output is None:
            return
        histogram = output.histogram
        edges = np.log10(np.maximum(np.asarray(histogram.edges, dtype=float), EPSILON))
        counts = np.asarray(histogram.counts, dtype=float)
        if histogram.zero_count:  # exact matches get a bar of their own, a decade left of the first bin
            first = float(edges[0]) if len(edges) else ZERO_BIN_LOG10
            edges = np.r_[first - 1.0, edges] if len(edges) else np.array([first - 1.0, first])
            counts = np.r_[float(histogram.zero_count), counts]
        if len(counts):
            self.histogram.plot(edges, counts, stepMode="center", fillLevel=0, brush=(21, 101, 192, 120),
                                pen=pg.mkPen(NODE_POINT_COLOUR))
            atol_line = pg.InfiniteLine(math.log10(max(output.atol, EPSILON)), angle=90,
                                        pen=pg.mkPen(FAIL_COLOUR, style=Qt.PenStyle.DashLine), label="atol")
            self.histogram.addItem(atol_line)
        pairs = output.scatter
        if pairs.torch_values:
            torch_values = np.asarray(pairs.torch_values, dtype=float)
            onnx_values = np.asarray(pairs.onnx_values, dtype=float)
            self.scatter.plot(torch_values, onnx_values, pen=None, symbol="o", symbolSize=4,
                              symbolBrush=(21, 101, 192, 110), symbolPen=None)
            low, high = float(np.nanmin(torch_values)), float(np.nanmax(torch_values))
            self.scatter.plot([low, high], [low, high], pen=pg.mkPen("#999", style=Qt.PenStyle.DashLine))

    def _plot_per_output(self, outputs: list[OutputStats]) -> None:
        self.per_output.clear()
        if not outputs:
            return
        values = np.maximum([o.max_abs if not math.isnan(o.max_abs) else 1.0 for o in outputs], EPSILON)
        brushes = [pg.mkBrush(PASS_COLOUR if o.passed else FAIL_COLOUR) for o in outputs]
        bars = pg.BarGraphItem(x=np.arange(len(outputs)), height=np.log10(values) - math.log10(EPSILON),
                               y0=math.log10(EPSILON), width=0.6, brushes=brushes)
        self.per_output.setLogMode(y=False)
        self.per_output.addItem(bars)
        self.per_output.plot(np.arange(len(outputs)), np.log10(values), pen=None, symbol="o", symbolSize=6)
        self.per_output.setLabel("left", "log10 max abs")
        self.per_output.getAxis("bottom").setTicks([[(i, o.name) for i, o in enumerate(outputs)]])
        self.per_output.setYRange(float(np.log10(values).min()) - 1, float(np.log10(values).max()) + 1)

    def _plot_per_node(self, result: CompareResult) -> None:
        self.per_node.clear()
        analysis = result.node_analysis
        if analysis is None or not analysis.nodes:
            return
        errors = np.maximum([node.max_abs for node in analysis.nodes], EPSILON)
        self._node_ids = [node.onnx_node for node in analysis.nodes]
        x = np.arange(len(errors))
        brushes = [pg.mkBrush(FAIL_COLOUR if node.exceeds else NODE_POINT_COLOUR) for node in analysis.nodes]
        points = pg.ScatterPlotItem(x=x, y=np.log10(errors), brush=brushes, size=7, pen=None,
                                    data=list(range(len(errors))), hoverable=True,
                                    tip=lambda x, y, data: self._node_tip(int(data)))
        points.sigClicked.connect(self._on_node_point_clicked)
        self.per_node.setLogMode(y=False)
        self.per_node.setLabel("left", "log10 max abs")
        self.per_node.plot(x, np.log10(errors), pen=pg.mkPen("#90a4ae"))
        self.per_node.setXRange(-0.5, len(errors) - 0.5)
        self.per_node.addItem(points)
        first = analysis.first_divergent
        if first is not None and first.onnx_node in self._node_ids:
            index = self._node_ids.index(first.onnx_node)
            marker = pg.InfiniteLine(index, angle=90, pen=pg.mkPen(FIRST_DIVERGENT_COLOUR, width=2),
                                     label=f"first divergent: {first.onnx_node}",
                                     labelOpts={"position": 0.9, "color": FIRST_DIVERGENT_COLOUR})
            self.per_node.addItem(marker)

    def _node_tip(self, index: int) -> str:
        node = self.result.node_analysis.nodes[index]
        return f"{node.onnx_node} ({node.onnx_kind})\nfrom {node.torchscript_kind}\nmax abs {node.max_abs:.3g}"

    def _on_node_point_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            index = int(points[0].data())
            self.node_picked.emit(self._node_ids[index])

    def node_errors_for_marks(self) -> dict[str, float]:
        """ONNX node id -> error in [0, 1] (log scale between tolerance and 100x tolerance)."""
        analysis = self.result.node_analysis if self.result else None
        if analysis is None:
            return {}
        marks: dict[str, float] = {}
        for node in analysis.nodes:
            limit = max(node.atol + node.rtol * 1.0, EPSILON)
            score = math.log10(max(node.max_abs, EPSILON) / limit) / 2 + 0.5
            marks[node.onnx_node] = max(marks.get(node.onnx_node, 0.0), min(max(score, 0.0), 1.0))
        return marks
