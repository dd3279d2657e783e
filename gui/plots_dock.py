"""The Plots dock: Compare's plots in a panel of their own, a tab beside Compare and Log that can be
detached and enlarged while the graphs stay in view."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QStackedWidget, QWidget

WAITING_TEXT = "Compare (F6) plots the differences between torch and ONNX Runtime here."


class PlotsDock(QDockWidget):
    """Holds whatever widget plots a comparison (gui/compare_plots.py, built with the first result)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Plots", parent)
        self.setObjectName("PlotsDock")
        self._stack = QStackedWidget()
        self._waiting = QLabel(WAITING_TEXT)
        self._waiting.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._waiting.setWordWrap(True)
        self._stack.addWidget(self._waiting)
        self.setWidget(self._stack)

    def hold(self, plots: QWidget) -> None:
        """Show ``plots`` in this dock (once: later results redraw the same widget)."""
        if self._stack.indexOf(plots) < 0:
            self._stack.addWidget(plots)
        self._stack.setCurrentWidget(plots)

    def show_waiting(self) -> None:
        self._stack.setCurrentWidget(self._waiting)
