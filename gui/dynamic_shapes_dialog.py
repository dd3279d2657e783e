"""Run > Dynamic shapes…: which dims of each input the export keeps dynamic (torch.export's
``dynamic_shapes``, one row per input tensor, by the names the panes show)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fixport.core.project.dynamic_shapes import dims_text, parse_dims, shapes_argument
from fixport.core.words.errors import ExportError

TITLE = "Dynamic shapes"
EXPLANATION = ("Dims the export keeps dynamic, as AXIS: NAME pairs (0: batch, 1: seq). Equal names are one dim "
               "across inputs. Empty: the input keeps its traced shape. The analysis then also checks each "
               "dynamic dim at other sizes.")
ERROR_STYLE = "color: #c62828;"
DIMS_COLUMN = 2


class DynamicShapesDialog(QDialog):
    """A table of the model's inputs; OK refuses dims it cannot read, naming the input."""

    def __init__(self, axes: dict[str, dict[int, str]], input_names: list[str],
                 input_shapes: list[tuple[int, ...]], parent: QWidget | None = None,
                 proposed: dict[str, dict[int, str]] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        self.input_names = list(input_names)
        self.input_shapes = list(input_shapes)
        layout = QVBoxLayout(self)
        explanation = QLabel(EXPLANATION)
        explanation.setWordWrap(True)
        layout.addWidget(explanation)
        self.table = QTableWidget(len(self.input_names), 3)
        self.table.setHorizontalHeaderLabels(["Input", "Traced shape", "Dynamic dims"])
        self.table.horizontalHeader().setSectionResizeMode(DIMS_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        for row, name in enumerate(self.input_names):
            shape = self.input_shapes[row] if row < len(self.input_shapes) else ()
            for column, text in enumerate((name, "x".join(map(str, shape)) or "scalar")):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                self.table.setItem(row, column, item)
            self.table.setItem(row, DIMS_COLUMN, QTableWidgetItem(dims_text(axes.get(name, {}))))
        self.table.resizeColumnsToContents()
        self.table.itemChanged.connect(lambda _item: self._show_argument())
        layout.addWidget(self.table, 1)
        self.use_proposal = QPushButton("Use the dims that vary between build()'s input sets")
        self.use_proposal.setToolTip("Inferred by torch's InputObserver from the input sets the model file gives: "
                                     + (shapes_argument(proposed) if proposed else "none vary"))
        self.use_proposal.clicked.connect(lambda: self.fill(proposed or {}))
        self.use_proposal.setVisible(proposed is not None)
        layout.addWidget(self.use_proposal)
        command_row = QHBoxLayout()
        self.argument = QLineEdit()
        self.argument.setReadOnly(True)
        self.argument.setToolTip("The same dims for the command line")
        command_row.addWidget(QLabel("Command line:"))
        command_row.addWidget(self.argument, 1)
        copy = QPushButton("Copy")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.argument.text()))
        command_row.addWidget(copy)
        layout.addLayout(command_row)
        self.error = QLabel()
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._show_argument()
        self.resize(640, 360)

    def fill(self, axes: dict[str, dict[int, str]]) -> None:
        """Every row's dims from ``axes`` (inputs it leaves out: none)."""
        for name in self.input_names:
            self.set_dims(name, dims_text(axes.get(name, {})))

    def set_dims(self, name: str, text: str) -> None:
        """Type dims for one input (as the user would in its row)."""
        self.table.item(self.input_names.index(name), DIMS_COLUMN).setText(text)

    def axes(self) -> dict[str, dict[int, str]]:
        """The dims typed, by input name (inputs with none left out); raises ExportError for a bad row."""
        axes: dict[str, dict[int, str]] = {}
        for row, name in enumerate(self.input_names):
            rank = len(self.input_shapes[row]) if row < len(self.input_shapes) else None
            dims = parse_dims(name, self.table.item(row, DIMS_COLUMN).text(), rank)
            if dims:
                axes[name] = dims
        return axes

    def accept(self) -> None:
        try:
            self.axes()
        except ExportError as error:
            self.error.setText(error.user_text())
            self.error.show()
            return
        super().accept()

    def _show_argument(self) -> None:
        try:
            axes = self.axes()
        except ExportError:
            return
        self.argument.setText(f"--dynamic-shapes '{shapes_argument(axes)}'" if axes else "")
        self.error.hide()


def ask_dynamic_shapes(parent: QWidget, axes: dict[str, dict[int, str]], input_names: list[str],
                       input_shapes: list[tuple[int, ...]], proposed: dict[str, dict[int, str]] | None = None
                       ) -> dict[str, dict[int, str]] | None:
    """The dynamic dims by input name the user set (None when cancelled)."""
    dialog = DynamicShapesDialog(axes, input_names, input_shapes, parent, proposed)
    return dialog.axes() if dialog.exec() else None
