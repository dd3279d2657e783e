"""The Compare dock's pyqtgraph plots: where torch and ONNX Runtime differ.

The histogram of |torch − ONNX| of one output, torch-vs-ONNX values, the max error of every
output, and the per-node error along the graph with the first divergent node marked; clicking
a point there picks that node. Built on the first result only: pyqtgraph costs start-up time.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGridLayout, QWidget

from fixport.core.records.compare_result import CompareResult, NodeError
from fixport.core.statistics.output_stats import OutputStats
from fixport.gui.graph_style import ERROR_FLOOR, FAIL_COLOUR, PASS_COLOUR

NODE_POINT_COLOUR = "#1565c0"
FIRST_DIVERGENT_COLOUR = "#ff6f00"
FEW_NODES_FOR_NAMED_TICKS = 8
ZERO_BIN_LOG10 = -12.0  # where exact matches are drawn when there is no other bin
FLOOR_DECADES_BELOW = 1.0  # exact zeros sit one decade below the smallest error or tolerance shown
DEFAULT_ERROR_FLOOR = 1e-12  # when there is neither (every error 0, tolerance 0)
LOG_AXIS_MARGIN = 0.5  # decades of air above and below the points
MIN_LOG_SPAN = 2.0  # decades: a single value still gets a readable axis
MIN_VALUE_SPAN_FRACTION = 0.1  # scatter of one repeated value: +-10 % around it
EXACT_LABEL = "0 (exact)"
WIDE_PANEL_RATIO = 2.6  # width / height above which the plots go in one row
PLOT_TITLES = {  # attribute: (title, title in one row, where each plot is narrow)
    "histogram": ("|torch − ONNX| histogram", "|torch − ONNX|"),
    "scatter": ("torch vs ONNX values", "torch vs ONNX"),
    "per_output": ("max abs error per output", "max abs / output"),
    "per_node": ("per-node max abs error along the graph (click a point)", "per node (click a point)"),
}


def error_floor(errors: list[float], tolerances: list[float]) -> float:
    """Where an error of exactly 0 is drawn on a log axis: a decade below the smallest error or tolerance."""
    positive = [value for value in (*errors, *tolerances) if value > 0 and math.isfinite(value)]
    smallest = min(positive) if positive else DEFAULT_ERROR_FLOOR * 10 ** FLOOR_DECADES_BELOW
    return smallest / 10 ** FLOOR_DECADES_BELOW


def log_errors(errors: list[float], floor: float) -> np.ndarray:
    """log10 of each error, exact zeros at the floor, NaN (no comparison) drawn at 1 as before."""
    values = np.asarray([1.0 if math.isnan(e) else e for e in errors], dtype=float)
    return np.log10(np.maximum(values, floor))


def padded_range(low: float, high: float, minimum_span: float, margin: float = 0.0) -> tuple[float, float]:
    """``[low, high]`` with ``margin`` each side, widened around its middle to at least ``minimum_span``."""
    low, high = low - margin, high + margin
    if high - low < minimum_span:
        middle = (low + high) / 2
        low, high = middle - minimum_span / 2, middle + minimum_span / 2
    return low, high


class ComparePlots(QWidget):
    """Four plots of one comparison; ``node_picked`` when a per-node point is clicked."""

    node_picked = Signal(str)  # ONNX node id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background="w", foreground="#333")
        self._nodes: list[NodeError] = []
        self._node_ids: list[str] = []
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
        for plot in (self.histogram, self.per_output, self.per_node):  # log10 and index axes: no "x0.001"
            for side in ("bottom", "left"):
                plot.getAxis(side).enableAutoSIPrefix(False)
        self._grid = grid
        self._in_one_row: bool | None = None
        self._arrange(in_one_row=False)
        self.setLayout(grid)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        """A wide, short panel (a docked tab under the graphs) gets the four plots in one row: two
        rows there would leave each plot too low to read."""
        super().resizeEvent(event)
        size = event.size()
        self._arrange(in_one_row=size.width() > WIDE_PANEL_RATIO * size.height())

    def _arrange(self, in_one_row: bool) -> None:
        if in_one_row == self._in_one_row:
            return
        self._in_one_row = in_one_row
        for plot in (self.histogram, self.scatter, self.per_output, self.per_node):
            self._grid.removeWidget(plot)
        for column, plot in enumerate((self.histogram, self.scatter, self.per_output)):
            self._grid.addWidget(plot, 0, column)
        if in_one_row:
            self._grid.addWidget(self.per_node, 0, 3, 1, 2)
        else:
            self._grid.addWidget(self.per_node, 1, 0, 1, 3)
        for column in range(5):
            self._grid.setColumnStretch(column, 1 if in_one_row or column < 3 else 0)
        for plot, (full, short) in PLOT_TITLES.items():
            getattr(self, plot).setTitle(short if in_one_row else full)

    def clear(self) -> None:
        for plot in (self.histogram, self.scatter, self.per_output, self.per_node):
            plot.clear()

    def show_result(self, result: CompareResult) -> None:
        self.clear()
        self.plot_output(result.outputs[0] if result.outputs else None)
        self.plot_per_output(result.outputs)
        self.plot_per_node(result)

    def item_counts(self) -> dict[str, int]:
        """How many data items each plot shows (tests check the plots are not empty)."""
        return {name: len(plot.getPlotItem().listDataItems()) for name, plot in
                (("histogram", self.histogram), ("scatter", self.scatter), ("per_output", self.per_output),
                 ("per_node", self.per_node))}

    def plot_output(self, output: OutputStats | None) -> None:
        self.histogram.clear()
        self.scatter.clear()
        if output is None:
            return
        histogram = output.histogram
        edges = np.log10(np.maximum(np.asarray(histogram.edges, dtype=float), ERROR_FLOOR))
        counts = np.asarray(histogram.counts, dtype=float)
        if histogram.zero_count:  # exact matches get a bar of their own, a decade left of the first bin
            first = float(edges[0]) if len(edges) else ZERO_BIN_LOG10
            edges = np.r_[first - 1.0, edges] if len(edges) else np.array([first - 1.0, first])
            counts = np.r_[float(histogram.zero_count), counts]
        if len(counts):
            self.histogram.plot(edges, counts, stepMode="center", fillLevel=0, brush=(21, 101, 192, 120),
                                pen=pg.mkPen(NODE_POINT_COLOUR))
            atol_log = math.log10(max(output.atol, ERROR_FLOOR)) if output.atol > 0 else None
            if atol_log is not None:
                self.histogram.addItem(pg.InfiniteLine(atol_log, angle=90, label="atol",
                                                       pen=pg.mkPen(FAIL_COLOUR, style=Qt.PenStyle.DashLine)))
            shown = [float(edges.min()), float(edges.max())] + ([atol_log] if atol_log is not None else [])
            self.histogram.setXRange(*padded_range(min(shown), max(shown), MIN_LOG_SPAN, LOG_AXIS_MARGIN), padding=0)
            self.histogram.setYRange(0, float(counts.max()) * 1.1 or 1.0, padding=0)
        pairs = output.scatter
        if pairs.torch_values:
            torch_values = np.asarray(pairs.torch_values, dtype=float)
            onnx_values = np.asarray(pairs.onnx_values, dtype=float)
            self.scatter.plot(torch_values, onnx_values, pen=None, symbol="o", symbolSize=4,
                              symbolBrush=(21, 101, 192, 110), symbolPen=None)
            low, high = float(np.nanmin(torch_values)), float(np.nanmax(torch_values))
            self.scatter.plot([low, high], [low, high], pen=pg.mkPen("#999", style=Qt.PenStyle.DashLine))
            if high - low <= 0:  # one value (or one element): pyqtgraph's autorange has nothing to span
                span = max(abs(low) * MIN_VALUE_SPAN_FRACTION, DEFAULT_ERROR_FLOOR)
                low_onnx, high_onnx = float(np.nanmin(onnx_values)), float(np.nanmax(onnx_values))
                self.scatter.setXRange(*padded_range(low, high, span), padding=0)
                self.scatter.setYRange(*padded_range(min(low, low_onnx), max(high, high_onnx), span), padding=0)

    def plot_per_output(self, outputs: list[OutputStats]) -> None:
        self.per_output.clear()
        if not outputs:
            return
        # An output never compared (not produced, another shape) has no error to draw: no bar, and its
        # tick says so with a dash, as the table does, rather than a bar at a made-up height.
        errors = [o.max_abs if o.compared else math.nan for o in outputs]
        floor = error_floor([e for e in errors if not math.isnan(e)], [o.atol for o in outputs])
        bottom = math.log10(floor) - LOG_AXIS_MARGIN
        heights = np.where([o.compared for o in outputs], log_errors(errors, floor), bottom)
        brushes = [pg.mkBrush(PASS_COLOUR if o.passed else FAIL_COLOUR) for o in outputs]
        bars = pg.BarGraphItem(x=np.arange(len(outputs)), height=heights - bottom, y0=bottom, width=0.6,
                               brushes=brushes)
        self.per_output.setLogMode(y=False)
        self.per_output.addItem(bars)
        measured = [i for i, o in enumerate(outputs) if o.compared]
        self.per_output.plot(np.asarray(measured), heights[measured], pen=None, symbol="o", symbolSize=6)
        self.per_output.setLabel("left", "log10 max abs")
        self.per_output.getAxis("bottom").setTicks([[(i, o.name if o.compared else f"{o.name} —")
                                                     for i, o in enumerate(outputs)]])
        self._mark_exact(self.per_output, errors, floor)
        self.per_output.setXRange(-0.5, len(outputs) - 0.5, padding=0)
        self.per_output.setYRange(*padded_range(bottom, float(heights.max()), MIN_LOG_SPAN, LOG_AXIS_MARGIN),
                                  padding=0)

    def plot_per_node(self, result: CompareResult) -> None:
        self.per_node.clear()
        analysis = result.node_analysis
        if analysis is None or not analysis.nodes:
            return
        raw = [node.max_abs for node in analysis.nodes]
        floor = error_floor(raw, [node.atol for node in analysis.nodes])
        errors = 10 ** log_errors(raw, floor)
        self._nodes = list(analysis.nodes)
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
        self.per_node.setXRange(-0.5, len(errors) - 0.5, padding=0)
        few = len(errors) <= FEW_NODES_FOR_NAMED_TICKS  # name each node; a node index is never fractional
        self.per_node.getAxis("bottom").setTicks([[(i, node.onnx_node) for i, node in enumerate(analysis.nodes)]]
                                                 if few else None)
        logs = np.log10(errors)
        self.per_node.setYRange(*padded_range(float(logs.min()), float(logs.max()), MIN_LOG_SPAN, LOG_AXIS_MARGIN),
                                padding=0)
        self._mark_exact(self.per_node, raw, floor)
        self.per_node.addItem(points)
        first = analysis.first_divergent
        if first is not None and first.onnx_node in self._node_ids:
            index = self._node_ids.index(first.onnx_node)
            marker = pg.InfiniteLine(index, angle=90, pen=pg.mkPen(FIRST_DIVERGENT_COLOUR, width=2),
                                     label=f"first divergent: {first.onnx_node}",
                                     labelOpts={"position": 0.9, "color": FIRST_DIVERGENT_COLOUR})
            self.per_node.addItem(marker)

    @staticmethod
    def _mark_exact(plot: pg.PlotWidget, errors: list[float], floor: float) -> None:
        """A dotted line, labelled, where errors of exactly 0 are drawn."""
        if any(error == 0 for error in errors):
            plot.addItem(pg.InfiniteLine(math.log10(floor), angle=0, label=EXACT_LABEL,
                                         labelOpts={"position": 0.05, "color": "#666"},
                                         pen=pg.mkPen("#bbb", style=Qt.PenStyle.DotLine)))

    def _node_tip(self, index: int) -> str:
        node = self._nodes[index]
        return f"{node.onnx_node} ({node.onnx_kind})\nfrom {node.source_kind}\nmax abs {node.max_abs:.3g}"

    def _on_node_point_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            index = int(points[0].data())
            self.node_picked.emit(self._node_ids[index])

