"""A bar above the graphs that offers to restore unsaved edits found in an autosave."""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

BAR_STYLE = "QFrame { background: #fff8e1; border-bottom: 1px solid #ffe082; }"


class RestoreBar(QFrame):
    restore_clicked = Signal()
    discard_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setStyleSheet(BAR_STYLE)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.label = QLabel()
        layout.addWidget(self.label, 1)
        self.restore_button = QPushButton("Restore")
        self.discard_button = QPushButton("Discard")
        self.restore_button.clicked.connect(self.restore_clicked)
        self.discard_button.clicked.connect(self.discard_clicked)
        layout.addWidget(self.restore_button)
        layout.addWidget(self.discard_button)
        self.hide()

    def offer(self, autosave: Path | None) -> None:
        """Show the offer for ``autosave``, or hide the bar (None)."""
        if autosave is None or not autosave.exists():
            self.hide()
            return
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(autosave.stat().st_mtime))
        self.label.setText(f"Unsaved edits to this project from {when} were found (Fixport closed "
                           "before they were saved). Restore them?")
        self.show()
