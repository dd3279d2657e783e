"""The Compare dock: the verdict and per-output statistics; its plots (gui/compare_plots.py) sit in the
Plots dock beside it when the window gives one, else under the table."""
from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fixport.core.records.compare_result import CompareResult
from fixport.core.statistics.output_stats import NOT_MEASURED, OutputStats
from fixport.core.words.runtimes import OPENVINO, OPENVINO_NAME, ORT, RUNTIME_TITLES
from fixport.gui.graph_style import ERROR_FLOOR, FAIL_COLOUR, PASS_COLOUR, WARN_COLOUR
from fixport.gui.optimizer_table import OptimizerGuardView

if TYPE_CHECKING:
    from fixport.gui.compare_plots import ComparePlots
    from fixport.gui.plots_dock import PlotsDock

TABLE_COLUMNS = ("output", "shape", "dtype", "max abs", "mean abs", "max rel", "RMSE", "cosine", "mismatch", "result")
TABLE_VISIBLE_ROWS = 4
SUMMARY_MAX_HEIGHT = 120  # px; longer summaries scroll


def _number(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3g}"


def runtime_words(providers_used: list[str]) -> str:
    """Which runtime the export ran in, for the summary line."""
    return RUNTIME_TITLES[OPENVINO] if OPENVINO_NAME in providers_used else RUNTIME_TITLES[ORT]


class CompareDock(QDockWidget):
    node_picked = Signal(str)  # ONNX node id

    def __init__(self, parent: QWidget | None = None, plots_dock: PlotsDock | None = None) -> None:
        super().__init__("Compare", parent)
        self.setObjectName("CompareDock")
        self.plots_dock = plots_dock
        self.result: CompareResult | None = None
        self._node_ids: list[str] = []
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        header = QHBoxLayout()
        self.summary = QLabel("Press Compare (F6) to run torch and ONNX Runtime on the same inputs.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        summary_area = QScrollArea()  # a checkpoint's generation steps and notes can run long
        summary_area.setWidget(self.summary)
        summary_area.setWidgetResizable(True)
        summary_area.setFrameShape(QFrame.Shape.NoFrame)
        summary_area.setMaximumHeight(SUMMARY_MAX_HEIGHT)
        summary_area.setSizeAdjustPolicy(QScrollArea.SizeAdjustPolicy.AdjustToContents)
        header.addWidget(summary_area, 1)
        self.run_label = QLabel("Input set:")
        header.addWidget(self.run_label)
        self.run_choice = QComboBox()  # every input set (the traced shapes, random ones, other sizes) or the worst
        self.run_choice.setToolTip("The table for one input set; the plots show the worst of them")
        self.run_choice.currentIndexChanged.connect(self._on_run_changed)
        header.addWidget(self.run_choice)
        header.addWidget(QLabel("Output:"))
        self.output_choice = QComboBox()
        self.output_choice.currentIndexChanged.connect(self._on_output_changed)
        header.addWidget(self.output_choice)
        layout.addLayout(header)
        self.settings_label = QLabel()  # precision mode, provider options, torch device, tolerance table
        self.settings_label.setWordWrap(True)
        self.placement_label = QLabel()  # where ONNX Runtime ran each node; tooltip: every node
        self.placement_label.setWordWrap(True)
        self.placement_label.setTextFormat(Qt.TextFormat.RichText)
        for label in (self.settings_label, self.placement_label):
            label.hide()
            layout.addWidget(label)
        self.run_label.hide()
        self.run_choice.hide()
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(TABLE_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        layout.addWidget(self.table, 1)
        self.optimizers = OptimizerGuardView()  # --optimize in the window: the field and the variants' table
        self.optimizers.node_picked.connect(self.node_picked)
        layout.addWidget(self.optimizers)
        self.plots: ComparePlots | None = None  # built with the first result: pyqtgraph loads late
        self._plots_layout = layout
        self.setWidget(body)

    # ---- public API ----
    def clear(self) -> None:
        self.result = None
        self.summary.setText("Press Compare (F6) to run torch and ONNX Runtime on the same inputs.")
        self.table.setRowCount(0)
        self.optimizers.clear()
        for label in (self.settings_label, self.placement_label):
            label.clear()
            label.setToolTip("")
            label.hide()
        for choice in (self.output_choice, self.run_choice):
            choice.blockSignals(True)
            choice.clear()
            choice.blockSignals(False)
        self.run_label.hide()
        self.run_choice.hide()
        if self.plots is not None:
            self.plots.clear()
            self.plots.hide()  # empty axes say nothing: the plots appear with a result
        if self.plots_dock is not None:
            self.plots_dock.show_waiting()

    def show_result(self, result: CompareResult) -> None:
        self.clear()
        self.result = result
        self._ensure_plots().show()
        verdict = (f"<b style='color:{PASS_COLOUR}'>PASS</b>" if result.passed
                   else f"<b style='color:{FAIL_COLOUR}'>FAIL</b>")
        providers = ", ".join(result.providers_used)
        messages = "".join(f"<br><b>{html.escape(m)}</b>" for m in result.baked_inputs)
        messages += "".join(f"<br><b style='color:{FAIL_COLOUR}'>{html.escape(e.sentence())}</b>"
                            for e in result.internal_errors)
        messages += "".join(f"<br><i>{m}</i>" for m in result.messages)
        if result.export_dtype is not None:  # a checkpoint: the dtype exported, and how each provider runs it
            first, *providers = result.export_dtype.lines()
            messages += f"<br>{html.escape(first)}" + "".join(f"<br>&nbsp;&nbsp;{html.escape(line)}"
                                                             for line in providers)
        if result.generation is not None:  # a decoder checkpoint: the steps of its greedy decode and its tokens
            colour = PASS_COLOUR if result.generation.passed else FAIL_COLOUR
            first, *runs = result.generation.lines(tokens=True)
            messages += f"<br><b style='color:{colour}'>{html.escape(first)}</b>"
            messages += "".join(f"<br>{'&nbsp;' * (len(line) - len(line.lstrip()))}{html.escape(line.strip())}"
                                for line in runs)
        first = result.node_analysis.first_divergent if result.node_analysis else None
        divergent = (f"<br>First divergent node: <b>{first.onnx_node}</b> ({first.onnx_kind}) from "
                     f"{first.source_kind} {first.scope} {first.source}"
                     + (f", template {first.template}" if first.template else "")) if first else ""
        self.summary.setText(f"{verdict} — {len(result.outputs)} output(s), {result.runs} input set(s), "
                             f"{runtime_words(result.providers_used)} on {providers}{divergent}{messages}")
        self._show_settings(result)
        self._fill_table(result.outputs)
        self.optimizers.show_report(result.optimizers)
        self.output_choice.blockSignals(True)
        self.output_choice.addItems([o.name for o in result.outputs])
        self.output_choice.blockSignals(False)
        if len(result.run_labels) > 1:
            self.run_choice.blockSignals(True)
            self.run_choice.addItems(["worst of all", *result.run_labels])
            self.run_choice.blockSignals(False)
            self.run_label.show()
            self.run_choice.show()
        self._ensure_plots().show_result(result)

    def plotted_item_counts(self) -> dict[str, int]:
        """How many data items each plot shows (tests check the plots are not empty)."""
        return self.plots.item_counts() if self.plots is not None else {}

    # ---- internals ----
    def _ensure_plots(self) -> ComparePlots:
        if self.plots is None:
            from fixport.gui.compare_plots import ComparePlots

            self.plots = ComparePlots()
            self.plots.node_picked.connect(self.node_picked)
            if self.plots_dock is None:
                self._plots_layout.addWidget(self.plots, 1)
        if self.plots_dock is not None:
            self.plots_dock.hold(self.plots)
        return self.plots

    def _show_settings(self, result: CompareResult) -> None:
        """The precision line, and the node placement (orange when nodes ran on CPU although CUDA was asked)."""
        self.settings_label.setText(result.precision_summary())
        self.settings_label.show()
        placement = result.placement
        if placement is None:
            return
        text = html.escape(placement.summary(result.provider_requested))
        if placement.cpu_nodes_while_cuda_asked(result.provider_requested):
            text = f"<span style='color:{WARN_COLOUR}'>{text}</span>"
        self.placement_label.setText(text)
        self.placement_label.setToolTip("\n".join(
            f"{provider}: {', '.join(nodes)}" for provider, nodes in placement.nodes_by_provider.items()))
        self.placement_label.show()

    def _fill_table(self, outputs: list[OutputStats]) -> None:
        self.table.setRowCount(len(outputs))
        for row, output in enumerate(outputs):
            numbers = ((_number(output.max_abs), _number(output.mean_abs), _number(output.max_rel),
                        _number(output.rmse), _number(output.cosine), f"{output.mismatch_fraction:.2%}")
                       if output.compared else (NOT_MEASURED,) * 6)  # nothing compared: no NaN statistics
            values = (output.name, "x".join(map(str, output.shape)), output.dtype, *numbers, _verdict(output))
            for column, text in enumerate(values):
                item = QTableWidgetItem(text)
                if column == len(values) - 1:
                    item.setForeground(QColor(PASS_COLOUR if output.passed else FAIL_COLOUR))
                    item.setToolTip(output.tied_order)
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        rows_height = sum(self.table.rowHeight(r) for r in range(min(len(outputs), TABLE_VISIBLE_ROWS)))
        height = self.table.horizontalHeader().height() + rows_height + 4
        if self.plots_dock is None:  # the plots below take the rest
            self.table.setFixedHeight(height)
        else:  # the table takes what the dock has, showing a few rows at least
            self.table.setMinimumHeight(height)

    def _on_run_changed(self, index: int) -> None:
        """The table for one input set (index 0: the worst of every set)."""
        if self.result is None:
            return
        runs = self.result.per_run
        self._fill_table(runs[index - 1] if 0 < index <= len(runs) else self.result.outputs)

    def _on_output_changed(self, index: int) -> None:
        if self.result is not None and 0 <= index < len(self.result.outputs):
            self._ensure_plots().plot_output(self.result.outputs[index])

    def node_errors_for_marks(self) -> dict[str, float]:
        """ONNX node id -> error in [0, 1] (log scale between tolerance and 100x tolerance)."""
        analysis = self.result.node_analysis if self.result else None
        if analysis is None:
            return {}
        marks: dict[str, float] = {}
        for node in analysis.nodes:
            limit = max(node.atol + node.rtol * 1.0, ERROR_FLOOR)
            score = math.log10(max(node.max_abs, ERROR_FLOOR) / limit) / 2 + 0.5
            marks[node.onnx_node] = max(marks.get(node.onnx_node, 0.0), min(max(score, 0.0), 1.0))
        return marks


def _verdict(output: OutputStats) -> str:
    """The result column: as the command line's (a pass up to the order of tied elements says so)."""
    if not output.produced:
        return f"FAIL not produced at input set {output.run + 1}: {output.problem}"
    if not output.passed:
        return f"FAIL {output.problem}".strip()
    return "pass (up to tied order)" if output.tied_order else "pass"
