"""The Problems dock: every unsupported node with its reason; clicking one focuses it."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QDockWidget, QTreeWidget, QTreeWidgetItem, QWidget

from fixport.core.model.problems import UnsupportedNode

REASON_LABELS = {
    "no_symbolic": "no symbolic at this opset",
    "symbolic_rejected": "symbolic rejected these arguments",
    "python_op": "autograd.Function without symbolic",
    "custom_op": "custom op, no ONNX mapping",
    "runtime_error": "ONNX Runtime cannot run it",
}
FIXED_COLOUR = QColor("#2e7d32")
PROBLEM_COLOUR = QColor("#c62828")
PROBLEM_ROLE = Qt.ItemDataRole.UserRole


class ProblemsDock(QDockWidget):
    """Lists problems; ``problem_activated`` carries the UnsupportedNode the user picked."""

    problem_activated = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Problems", parent)
        self.setObjectName("ProblemsDock")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Node", "Reason", "Where"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setColumnWidth(0, 230)
        self.tree.setColumnWidth(1, 220)
        self.tree.itemClicked.connect(self._on_item_clicked)
        self.tree.itemActivated.connect(self._on_item_clicked)
        self.tree.currentItemChanged.connect(lambda item, _previous: item and self._on_item_clicked(item))
        self.setWidget(self.tree)
        self.problems: list[UnsupportedNode] = []

    def set_problems(self, problems: list[UnsupportedNode], fixed_kinds: list[str] | None = None) -> None:
        self.problems = list(problems)
        self.tree.blockSignals(True)  # rebuilding the list is not the user picking a problem
        self.tree.clear()
        self.tree.blockSignals(False)
        for problem in problems:
            where = " · ".join(p for p in (problem.scope, problem.source) if p) or "top level"
            item = QTreeWidgetItem(["⚠ " + problem.display_kind, REASON_LABELS.get(problem.reason, problem.reason),
                                    where])
            item.setForeground(0, QBrush(PROBLEM_COLOUR))
            item.setToolTip(0, problem.message)
            item.setToolTip(1, problem.message)
            item.setData(0, PROBLEM_ROLE, problem)
            self.tree.addTopLevelItem(item)
        for kind in fixed_kinds or []:
            item = QTreeWidgetItem(["✓ " + kind, "fixed by a template", ""])
            item.setForeground(0, QBrush(FIXED_COLOUR))
            self.tree.addTopLevelItem(item)
        count = len(problems)
        self.setWindowTitle(f"Problems ({count})" if count else "Problems — none")

    def select_instance(self, instance: str) -> None:
        """Highlight the row of a node selected elsewhere, without re-emitting."""
        self.tree.blockSignals(True)
        try:
            for index in range(self.tree.topLevelItemCount()):
                item = self.tree.topLevelItem(index)
                problem = item.data(0, PROBLEM_ROLE)
                item.setSelected(bool(problem) and problem.instance == instance)
        finally:
            self.tree.blockSignals(False)

    def _on_item_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        problem = item.data(0, PROBLEM_ROLE)
        if problem is not None:
            self.problem_activated.emit(problem)
