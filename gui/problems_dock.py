"""The Problems dock: unsupported nodes grouped by kind and reason (ten index_put nodes are one
row that opens to ten), and after Fix all the fix chosen for each kind or why none fitted."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QDockWidget, QTreeWidget, QTreeWidgetItem, QWidget

from fixport.core.session.fix_all import FixedKind
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import describe_reason

FIXED_COLOUR = QColor("#2e7d32")
PROBLEM_COLOUR = QColor("#c62828")
NOT_FITTED_COLOUR = QColor("#8d6e63")
PROBLEM_ROLE = Qt.ItemDataRole.UserRole
MAPPING_ROLE = Qt.ItemDataRole.UserRole + 1
GROUP_INDENT = 14


def group_problems(problems: list[UnsupportedNode]) -> list[list[UnsupportedNode]]:
    """Problems of one kind and reason together, groups in the order their first member appears."""
    groups: dict[tuple[str, str], list[UnsupportedNode]] = {}
    for problem in problems:
        groups.setdefault((problem.display_kind, str(problem.reason)), []).append(problem)
    return list(groups.values())


class ProblemsDock(QDockWidget):
    """Lists problems; ``problem_activated`` carries the UnsupportedNode the user picked and
    ``fix_activated`` the FixMapping of a fixed kind's row."""

    problem_activated = Signal(object)
    fix_activated = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Problems", parent)
        self.setObjectName("ProblemsDock")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Problem", "Where"])
        self.tree.setIndentation(GROUP_INDENT)
        self.tree.setAlternatingRowColors(True)
        self.tree.setColumnWidth(0, 240)
        self.tree.itemClicked.connect(self._on_item_clicked)
        self.tree.itemActivated.connect(self._on_item_clicked)
        self.tree.currentItemChanged.connect(lambda item, _previous: item and self._on_item_clicked(item))
        self.setWidget(self.tree)
        self.problems: list[UnsupportedNode] = []

    def set_problems(self, problems: list[UnsupportedNode], fixed_kinds: list[str] | None = None,
                     outcomes: list[FixedKind] | None = None) -> None:
        """One row per kind and reason (its count and reason in the row itself, children per node);
        then a row per fixed kind: ``outcomes`` when Fix all ran, else the plain ``fixed_kinds``."""
        self.problems = list(problems)
        self.tree.blockSignals(True)  # rebuilding the list is not the user picking a problem
        self.tree.clear()
        self.tree.blockSignals(False)
        for group in group_problems(problems):
            self.tree.addTopLevelItem(self._group_item(group))
        for outcome in outcomes if outcomes is not None else [FixedKind(k, "fixed by a template")
                                                               for k in fixed_kinds or []]:
            self.tree.addTopLevelItem(self._fixed_item(outcome))
        count = len(problems)
        fixed = sum(1 for o in outcomes or [] if o.fitted)
        self.setWindowTitle(f"Problems ({count})" if count else
                            f"Problems — none ({fixed} kind(s) fixed by Fix all)" if fixed else "Problems — none")

    def group_counts(self) -> dict[str, int]:
        """Problem rows as shown: display kind -> how many nodes the row opens to."""
        counts = {}
        for index in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(index)
            if item.data(0, PROBLEM_ROLE) is not None:
                counts[item.data(0, PROBLEM_ROLE).display_kind] = max(item.childCount(), 1)
        return counts

    def select_instance(self, instance: str) -> None:
        """Highlight the row of a node selected elsewhere, without re-emitting."""
        self.tree.blockSignals(True)
        try:
            for index in range(self.tree.topLevelItemCount()):
                group = self.tree.topLevelItem(index)
                rows = [group.child(i) for i in range(group.childCount())] or [group]
                for item in rows:
                    problem = item.data(0, PROBLEM_ROLE)
                    item.setSelected(bool(problem) and problem.instance == instance)
        finally:
            self.tree.blockSignals(False)

    # ---- rows ----
    @staticmethod
    def _group_item(group: list[UnsupportedNode]) -> QTreeWidgetItem:
        first = group[0]
        count = f"  ×{len(group)}" if len(group) > 1 else ""
        item = QTreeWidgetItem([f"⚠ {first.display_kind}{count}\n    {describe_reason(first.reason)}",
                                _where(first) if len(group) == 1 else f"{len(group)} nodes"])
        item.setForeground(0, QBrush(PROBLEM_COLOUR))
        item.setToolTip(0, first.message)
        item.setToolTip(1, first.message)
        item.setData(0, PROBLEM_ROLE, first)  # the group row opens its first node
        if len(group) > 1:
            for problem in group:
                child = QTreeWidgetItem([problem.scope or "top level", problem.source])
                child.setToolTip(0, problem.message)
                child.setData(0, PROBLEM_ROLE, problem)
                item.addChild(child)
        return item

    @staticmethod
    def _fixed_item(outcome: FixedKind) -> QTreeWidgetItem:
        mark = "✓" if outcome.fitted else "✗"
        item = QTreeWidgetItem([f"{mark} {outcome.label}\n    {outcome.how}", ""])
        item.setForeground(0, QBrush(FIXED_COLOUR if outcome.fitted else NOT_FITTED_COLOUR))
        item.setToolTip(0, outcome.how)
        item.setData(0, MAPPING_ROLE, outcome.mapping)
        return item

    def _on_item_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        problem = item.data(0, PROBLEM_ROLE)
        if problem is not None:
            self.problem_activated.emit(problem)
        elif item.data(0, MAPPING_ROLE) is not None:
            self.fix_activated.emit(item.data(0, MAPPING_ROLE))


def _where(problem: UnsupportedNode) -> str:
    return " · ".join(p for p in (problem.scope, problem.source) if p) or "top level"
