"""A small Python code editor: highlighting, line numbers, and an error line marker."""
from __future__ import annotations

import keyword
import re

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QPainter,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

ERROR_LINE_COLOUR = QColor("#ffcdd2")
GUTTER_COLOUR = QColor("#f0f0f0")
GUTTER_TEXT_COLOUR = QColor("#888888")
TAB_SPACES = 4


def _format(colour: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    text_format = QTextCharFormat()
    text_format.setForeground(QColor(colour))
    if bold:
        text_format.setFontWeight(QFont.Weight.Bold)
    text_format.setFontItalic(italic)
    return text_format


class PythonHighlighter(QSyntaxHighlighter):
    """Keywords, strings, numbers, comments, decorators and g.op names."""

    RULES = [
        (re.compile(r"\b(" + "|".join(keyword.kwlist) + r")\b"), _format("#0033b3", bold=True)),
        (re.compile(r"\b(self|g|params|torch)\b"), _format("#871094")),
        (re.compile(r"@\w+(\.\w+)*"), _format("#9e880d")),
        (re.compile(r"\b\d+(\.\d+)?([eE][-+]?\d+)?\b"), _format("#1750eb")),
        (re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')"), _format("#067d17")),
        (re.compile(r"#[^\n]*"), _format("#8c8c8c", italic=True)),
    ]
    DOCSTRING = re.compile(r'"""')
    DOCSTRING_FORMAT = _format("#067d17", italic=True)

    def highlightBlock(self, text: str) -> None:
        for pattern, text_format in self.RULES:
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), text_format)
        self._highlight_docstrings(text)

    def _highlight_docstrings(self, text: str) -> None:
        inside = self.previousBlockState() == 1
        start = 0 if inside else -1
        for match in self.DOCSTRING.finditer(text):
            if inside:
                self.setFormat(start, match.end() - start, self.DOCSTRING_FORMAT)
                inside = False
            else:
                start, inside = match.start(), True
        if inside:
            self.setFormat(max(start, 0), len(text) - max(start, 0), self.DOCSTRING_FORMAT)
        self.setCurrentBlockState(1 if inside else 0)


class _LineNumbers(QWidget):
    def __init__(self, editor: CodeEditor) -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event) -> None:
        self.editor.paint_gutter(event)


class CodeEditor(QPlainTextEdit):
    """Edits a symbolic's source; ``mark_error(line, message)`` shows where a problem is."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        font = QFont("monospace", 10)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * TAB_SPACES)
        self.highlighter = PythonHighlighter(self.document())
        self.gutter = _LineNumbers(self)
        self.error_line: int | None = None
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._update_gutter)
        self._update_gutter_width()

    def set_source(self, source: str) -> None:
        self.clear_error()
        self.setPlainText(source)

    def source(self) -> str:
        return self.toPlainText()

    def show_line(self, line: int) -> None:
        """Scroll so that ``line`` (1-based) is the first visible line."""
        if line and 1 <= line <= self.blockCount():
            self.verticalScrollBar().setValue(line - 1)

    def mark_error(self, line: int | None, message: str) -> None:
        """Highlight ``line`` (1-based) and show ``message`` as its tooltip."""
        self.error_line = line
        self.setToolTip(message)
        selections = []
        if line is not None and 1 <= line <= self.blockCount():
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(ERROR_LINE_COLOUR)
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            cursor = QTextCursor(self.document().findBlockByNumber(line - 1))
            selection.cursor = cursor
            selections.append(selection)
            self.setTextCursor(cursor)
            self.centerCursor()
        self.setExtraSelections(selections)

    def clear_error(self) -> None:
        self.error_line = None
        self.setToolTip("")
        self.setExtraSelections([])

    # ---- line-number gutter ----
    def gutter_width(self) -> int:
        digits = max(2, len(str(self.blockCount())))
        return 8 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_gutter_width(self, _count: int = 0) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _update_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        contents = self.contentsRect()
        self.gutter.setGeometry(QRect(contents.left(), contents.top(), self.gutter_width(), contents.height()))

    def paint_gutter(self, event) -> None:
        painter = QPainter(self.gutter)
        painter.fillRect(event.rect(), GUTTER_COLOUR)
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            number = block.blockNumber() + 1
            painter.setPen(QColor("#c62828") if number == self.error_line else GUTTER_TEXT_COLOUR)
            painter.drawText(0, top, self.gutter.width() - 4, height, Qt.AlignmentFlag.AlignRight, str(number))
            block = block.next()
            top += round(self.blockBoundingRect(block).height()) if block.isValid() else height
        painter.end()
