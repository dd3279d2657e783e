"""Open example: a gallery of the built-in example models with what each one shows."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fixport.examples.catalog import list_examples

PATH_ROLE = Qt.ItemDataRole.UserRole


class ExampleGallery(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open example")
        self.resize(640, 520)
        self.chosen_path: str | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Built-in examples: models that fail to export the ways real models do."))
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        for example in list_examples():
            kinds = sorted({e["kind"] for e in example.expected_unsupported}) or ["exports cleanly"]
            item = QListWidgetItem(f"{example.title}\n    opset {example.opset} · {', '.join(kinds)}")
            item.setToolTip(example.description)
            item.setData(PATH_ROLE, str(example.path))
            self.list.addItem(item)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        self.list.setCurrentRow(0)
        layout.addWidget(self.list, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def accept(self) -> None:
        item = self.list.currentItem()
        self.chosen_path = item.data(PATH_ROLE) if item else None
        super().accept()
