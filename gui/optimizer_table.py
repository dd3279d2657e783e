"""The optimizer guard's table in the Compare dock: each deployed variant against torch, its cost
where it passes, the passes to turn off and the first divergent node where it does not."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from fixport.core.records.runtime_cost import readable_bytes
from fixport.core.words.optimizer_guard import OPTIMIZE_HELP, UNAVAILABLE, OptimizerReport, VariantOutcome
from fixport.gui.graph_style import FAIL_COLOUR, PASS_COLOUR, WARN_COLOUR

VISIBLE_ROWS = 6  # variants shown before the table scrolls (ort's four levels and two optimizers)
OPTIMIZER_COLUMNS = ("variant", "result", "max abs", "size", "nodes", "latency", "turn off", "first divergent node")


class OptimizerGuardView(QWidget):
    """The "Optimize:" field (what the next Compare checks) above the table of the last report."""

    optimize_changed = Signal(str)
    node_picked = Signal(str)  # a first divergent node's name (in the optimized graph; often the export's too)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Optimize:"))
        self.optimize = QLineEdit()
        self.optimize.setPlaceholderText("e.g. ort,onnxscript (empty: the export only)")
        self.optimize.setToolTip(OPTIMIZE_HELP)
        self.optimize.textChanged.connect(self._on_optimize_changed)
        row.addWidget(self.optimize, 1)
        layout.addLayout(row)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.PlainText)  # pass names and options, never markup
        self.table = QTableWidget(0, len(OPTIMIZER_COLUMNS))
        self.table.setHorizontalHeaderLabels(OPTIMIZER_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.cellDoubleClicked.connect(self._on_cell_double_clicked)
        for widget in (self.notes, self.table):
            widget.hide()
            layout.addWidget(widget)
        self._outcomes: list[VariantOutcome] = []

    def clear(self) -> None:
        self._outcomes = []
        self.table.setRowCount(0)
        self.table.hide()
        self.notes.hide()

    def show_report(self, report: OptimizerReport | None) -> None:
        self.clear()
        if report is None:
            return
        self._outcomes = list(report.outcomes)
        self.table.setRowCount(len(self._outcomes))
        for row, outcome in enumerate(self._outcomes):
            for column, text in enumerate(_cells(outcome)):
                item = QTableWidgetItem(text)
                item.setToolTip(_tooltip(outcome))
                if column == 1:
                    colour = PASS_COLOUR if outcome.passed else WARN_COLOUR if outcome.status == UNAVAILABLE \
                        else FAIL_COLOUR
                    item.setForeground(QColor(colour))
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        fixes = report.fixes
        self.notes.setText(" ".join(report.notes)
                           + (f" Saved in the project (and its fix script): "
                              f"{'; '.join(f.summary() for f in fixes)}." if fixes else ""))
        self.notes.show()
        self._fit_rows()
        self.table.show()

    def _fit_rows(self) -> None:
        """Tall enough for every variant (up to VISIBLE_ROWS) without scrolling: one row was all it showed."""
        rows = min(self.table.rowCount(), VISIBLE_ROWS)
        height = self.table.horizontalHeader().height() + sum(self.table.rowHeight(r) for r in range(rows))
        self.table.setMinimumHeight(height + 2 * self.table.frameWidth()
                                    + self.table.horizontalScrollBar().sizeHint().height())

    def rows(self) -> list[list[str]]:
        """The table's text, row by row (tests read what the user sees)."""
        return [[self.table.item(r, c).text() for c in range(self.table.columnCount())]
                for r in range(self.table.rowCount())]

    def _on_optimize_changed(self, text: str) -> None:
        self.optimize_changed.emit(text.strip())

    def _on_cell_double_clicked(self, row: int, _column: int) -> None:
        if 0 <= row < len(self._outcomes) and self._outcomes[row].first_divergent_node:
            self.node_picked.emit(self._outcomes[row].first_divergent_node)


def _cells(outcome: VariantOutcome) -> tuple[str, ...]:
    max_abs = "–" if outcome.max_abs is None or outcome.max_abs < 0 else f"{outcome.max_abs:.3g}"
    node = (f"{outcome.first_divergent_node} ({outcome.first_divergent_kind})"
            if outcome.first_divergent_node else "")
    return (outcome.variant, outcome.status, max_abs,
            "–" if outcome.file_bytes is None else readable_bytes(outcome.file_bytes),
            "–" if outcome.node_count is None else str(outcome.node_count),
            "–" if outcome.latency_ms is None else f"{outcome.latency_ms:.3g} ms",
            ", ".join(outcome.culprits), node)


def _tooltip(outcome: VariantOutcome) -> str:
    fix = f"\nFix: {outcome.fix.summary()} (verified against torch)." if outcome.fix else ""
    measured = "\nSize, nodes and latency: as fixed." if outcome.fix and outcome.latency_ms is not None else ""
    return (outcome.message or "Within tolerance of torch on every input set.") + fix + measured
