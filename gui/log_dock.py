"""The Log dock: everything that happened, with details the headline messages leave out."""
from __future__ import annotations

import time

from PySide6.QtGui import QFont, QTextCursor
from PySide6.QtWidgets import QDockWidget, QPlainTextEdit, QWidget

MAX_LOG_BLOCKS = 5000


class LogDock(QDockWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Log", parent)
        self.setObjectName("LogDock")
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LOG_BLOCKS)
        self.text.setFont(QFont("monospace", 9))
        self.setWidget(self.text)

    def log(self, message: str, details: str = "") -> None:
        stamp = time.strftime("%H:%M:%S")
        self.text.appendPlainText(f"[{stamp}] {message}")
        if details:
            self.text.appendPlainText("    " + details.rstrip().replace("\n", "\n    "))
        self.text.moveCursor(QTextCursor.MoveOperation.End)

    def contents(self) -> str:
        return self.text.toPlainText()
