"""Run > Shapes to check…: the input shapes the window's analysis and Compare also run the model at,
one input set a line (what ``--shapes`` takes on the command line)."""
from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from fixport.core.foundation.errors import InputSpecError
from fixport.core.project.shape_sets import (
    SHAPES_SYNTAX,
    example_shape_set,
    parse_shape_line,
    shape_names_error,
    unknown_names,
)

TITLE = "Shapes to check"
EXPLANATION = (f"Also run the model in torch and ONNX Runtime at these input shapes: one input set a line, as "
               f"{SHAPES_SYNTAX}; inputs a line leaves out keep their traced shape. Empty: a larger and a "
               "smaller size of each dim the export declares dynamic.")
ERROR_STYLE = "color: #c62828;"


class ShapesDialog(QDialog):
    """One shape set a line; OK refuses a line that cannot be read, or that names no input of the model."""

    def __init__(self, current: list[str], input_names: list[str], input_shapes: list[tuple[int, ...]],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        self.input_names = list(input_names)
        self._example = example_shape_set(self.input_names, list(input_shapes))
        layout = QVBoxLayout(self)
        explanation = QLabel(EXPLANATION)
        explanation.setWordWrap(True)
        layout.addWidget(explanation)
        self.hint = QLabel(_inputs_hint(self.input_names, list(input_shapes)))
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        self.editor = QPlainTextEdit("\n".join(current))
        self.editor.setPlaceholderText(f"e.g. {self._example}")
        layout.addWidget(self.editor, 1)
        self.error = QLabel()
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.resize(520, 300)

    def lines(self) -> list[str]:
        """The shape sets typed, blank lines left out."""
        return [line.strip() for line in self.editor.toPlainText().splitlines() if line.strip()]

    def accept(self) -> None:
        try:
            self._check(self.editor.toPlainText().splitlines())
        except InputSpecError as error:
            self.error.setText(error.user_text())
            self.error.show()
            return
        super().accept()

    def _check(self, lines: list[str]) -> None:
        """Raises for the first bad line: one that cannot be read, or (once the model's inputs are
        known) one naming an input the model lacks."""
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            unknown = unknown_names(parse_shape_line(number, line), self.input_names) if self.input_names else []
            if unknown:
                raise shape_names_error(unknown, self.input_names, self._example, in_window=True, line=number)


def _inputs_hint(names: list[str], shapes: list[tuple[int, ...]]) -> str:
    if not names:
        return "The model's inputs are named here once it has been analysed."
    described = [f"{name} ({'x'.join(str(d) for d in shapes[i]) or 'scalar'})" if i < len(shapes) else name
                 for i, name in enumerate(names)]
    return "The model's inputs (traced shape): " + ", ".join(described)


def ask_shapes_to_check(parent: QWidget, current: list[str], input_names: list[str],
                        input_shapes: list[tuple[int, ...]]) -> list[str] | None:
    """The shape sets the user typed (None when cancelled)."""
    dialog = ShapesDialog(current, input_names, input_shapes, parent)
    return dialog.lines() if dialog.exec() else None
