"""File ▸ Open sweep results…: a sweep's rows (`sweep --json`) in a table; double-click opens that model."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fixport.core.foundation.errors import FixportError
from fixport.core.sweep.reports import read_sweep_json
from fixport.core.sweep.rows import SweepRow

SWEEP_FILTER = "Sweep results (*.json)"
COLUMNS = ("model", "exporter", "status", "verdict", "largest error", "time (s)", "problems", "fixes chosen", "note")
LONG_TEXT_COLUMNS = ("problems", "fixes chosen")  # cut at this width (the tooltip has it all); the note stretches
LONG_TEXT_WIDTH = 260
VERDICT_COLOURS = {"pass": "#1b5e20", "fail": "#b71c1c", "not compared": "#e65100", "error": "#b71c1c"}
DIALOG_SIZE = (1100, 420)


class SweepWindow(Protocol):
    """What opening a sweep's rows uses of the main window (window_actions.ActionWindow has it all)."""

    log: Any

    def open_path(self, path: str | Path, export_options: dict[str, Any] | None = None) -> None: ...
    def show_error(self, error: Exception) -> None: ...


class SweepResultsDialog(QDialog):
    """The rows of one sweep; ``model_chosen(path, exporter)`` on a double-click or Enter on a row."""

    model_chosen = Signal(str, str)

    def __init__(self, rows: list[SweepRow], source: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows = rows
        self.setWindowTitle(f"Sweep results — {source.name}")
        self.resize(*DIALOG_SIZE)
        passed = sum(row.passed for row in rows)
        summary = QLabel(f"{len(rows)} row(s), {passed} passed, from {source}. Double-click a row to open its model "
                         "with that exporter.")
        summary.setWordWrap(True)
        self.table = QTableWidget(len(rows), len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        for name in LONG_TEXT_COLUMNS:
            header.setSectionResizeMode(COLUMNS.index(name), QHeaderView.ResizeMode.Interactive)
            header.resizeSection(COLUMNS.index(name), LONG_TEXT_WIDTH)
        header.setStretchLastSection(True)
        self._fill()
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the sweep's own order until a header is clicked
        self.table.setSortingEnabled(True)
        self.table.cellActivated.connect(self._on_row_activated)
        self.table.cellDoubleClicked.connect(self._on_row_activated)
        layout = QVBoxLayout(self)
        layout.addWidget(summary)
        layout.addWidget(self.table)

    def _fill(self) -> None:
        for index, row in enumerate(self.rows):
            problems = f"{len(row.problems)}" + (f": {', '.join(row.problem_kinds)}" if row.problems else "")
            note = "; ".join(part for part in (row.first_divergent and f"first divergent {row.first_divergent}",
                                               row.message) if part)
            cells = (row.name, row.exporter, row.status, row.verdict,
                     "—" if row.max_abs is None else f"{row.max_abs:.2e}", f"{row.total_seconds:.1f}", problems,
                     "; ".join(row.fixes), note)
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, index)  # the row's place in self.rows, kept across sorting
                item.setToolTip(row.model if column == 0 else text)
                if column == COLUMNS.index("verdict"):
                    item.setForeground(QColor(VERDICT_COLOURS.get(row.verdict, "#000000")))
                self.table.setItem(index, column, item)

    def row_at(self, table_row: int) -> SweepRow:
        item = self.table.item(table_row, 0)
        return self.rows[int(item.data(Qt.ItemDataRole.UserRole))]

    def _on_row_activated(self, table_row: int, _column: int) -> None:
        row = self.row_at(table_row)
        self.model_chosen.emit(row.model, row.exporter)


def show_sweep_results(window: SweepWindow, path: str | Path) -> SweepResultsDialog | None:
    """The sweep results at ``path`` in a dialog beside the window; an unreadable file is an error in the window."""
    qt_window = cast(QWidget, window)
    try:
        rows = read_sweep_json(Path(path))
    except FixportError as exc:
        window.show_error(exc)
        return None
    dialog = SweepResultsDialog(rows, Path(path), qt_window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.model_chosen.connect(lambda model, exporter: _open_row(window, model, exporter))
    dialog.show()
    window.log.log(f"Opened sweep results {path}: {len(rows)} row(s)")
    return dialog


def _open_row(window: SweepWindow, model: str, exporter: str) -> None:
    if not Path(model).exists():
        window.show_error(FixportError(f"{model} is no longer there.",
                                       "Open the model by hand (File ▸ Open model…), or sweep again."))
        return
    window.open_path(model, export_options={"exporter": exporter})


def open_sweep_results(window: SweepWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(cast(QWidget, window), "Open sweep results", "", SWEEP_FILTER)
    if path:
        show_sweep_results(window, path)
