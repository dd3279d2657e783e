"""Run > Dynamic shapes…: the window declares which input dims stay dynamic, as --dynamic-shapes does,
and the analysis then checks them at other sizes."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from fixport.core.project.dynamic_shapes import dims_text, dynamic_axes_from_shapes, parse_dims, shapes_argument
from fixport.core.words.errors import ExportError
from fixport.gui.dynamic_shapes_dialog import DynamicShapesDialog
from fixport.gui.window_actions import set_dynamic_shapes
from tests.test_gui_flow import run_job

FIRST_HALF = '''
import torch


class FirstHalf(torch.nn.Module):
    def forward(self, x):
        n = int(x.shape[1])
        return x[:, : n // 2] * 2


def build():
    return FirstHalf().eval(), (torch.randn(2, 8),)
'''


def test_dims_typed_in_the_window_read_back_and_become_the_command_line() -> None:
    assert parse_dims("x", "0: batch, 1=len", rank=2) == {0: "batch", 1: "len"}
    assert parse_dims("x", " ", rank=2) == {}
    assert parse_dims("x", "-1: len", rank=3) == {2: "len"}
    assert dims_text({1: "len", 0: "batch"}) == "0: batch, 1: len"
    with pytest.raises(ExportError, match="cannot be read at '1 len'"):
        parse_dims("x", "0: batch, 1 len")
    with pytest.raises(ExportError, match="x has 2 dims, so it has no axis 2"):
        parse_dims("x", "2: seq", rank=2)
    argument = shapes_argument({"past.0": {0: "batch", 2: "past"}})
    assert dynamic_axes_from_shapes(__import__("json").loads(argument)) == {"past.0": {0: "batch", 2: "past"}}


def _fill_dialog(qtbot, rows: list[dict[str, str]], seen: dict[str, list[str]]) -> None:
    """Once the dialog is up: type each attempt's rows and press OK, noting the error ('' once it closes)."""
    def step() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, DynamicShapesDialog):
            QTimer.singleShot(20, step)
            return
        for attempt in rows:
            for name, text in attempt.items():
                dialog.set_dims(name, text)
            seen["argument"].append(dialog.argument.text())
            qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
            seen["errors"].append(dialog.error.text() if dialog.isVisible() else "")
        if dialog.isVisible():
            dialog.reject()
    seen["errors"], seen["argument"] = [], []
    QTimer.singleShot(0, step)


def test_dims_declared_in_the_window_are_exported_dynamic_and_checked(qtbot, window, tmp_path: Path) -> None:
    model = tmp_path / "first_half.py"
    model.write_text(FIRST_HALF, encoding="utf-8")
    run_job(qtbot, window, lambda: window.open_path(model))
    assert window.workbench.analysis.unsupported == []  # at its traced shape the export is right

    seen: dict[str, list[str]] = {}
    _fill_dialog(qtbot, [{"x": "0: batch, 1 len"}, {"x": "0: batch, 1: len"}], seen)
    run_job(qtbot, window, window.actions["dynamic_shapes"].trigger)
    bad, accepted = seen["errors"]
    assert bad.startswith("The dynamic dims of x cannot be read at '1 len'."), bad
    assert accepted == ""
    assert seen["argument"][1] == """--dynamic-shapes '{"x": {"0": "batch", "1": "len"}}'"""

    assert window.workbench.project.export_options["dynamic_axes"] == {"x": {0: "batch", 1: "len"}}
    (problem,) = window.workbench.analysis.unsupported  # the trace baked x.shape[1]
    assert problem.reason == "shape_specialised", problem
    assert 'Dynamic shapes: {"x": {"0": "batch", "1": "len"}}; exporting again.' in window.log.contents()

    run_job(qtbot, window, lambda: set_dynamic_shapes(window, {}))
    assert "dynamic_axes" not in window.workbench.project.export_options
    assert window.workbench.analysis.unsupported == []


def test_the_dialog_shows_the_projects_dims_and_the_traced_shapes(qtbot) -> None:
    dialog = DynamicShapesDialog({"past.0": {0: "batch", 2: "past"}}, ["input_ids", "past.0"], [(1, 4), (1, 2, 3, 8)])
    qtbot.addWidget(dialog)
    assert [dialog.table.item(row, 1).text() for row in range(2)] == ["1x4", "1x2x3x8"]
    assert dialog.table.item(1, 2).text() == "0: batch, 2: past"
    dialog.set_dims("input_ids", "0: batch, 1: seq")
    assert dialog.axes() == {"input_ids": {0: "batch", 1: "seq"}, "past.0": {0: "batch", 2: "past"}}
    assert "input_ids" in dialog.argument.text()
    assert dialog.use_proposal.isHidden()  # one input set: nothing inferred


def test_the_dims_that_vary_between_input_sets_fill_the_dialog(qtbot) -> None:
    proposed = {"input_ids": {0: "batch", 1: "seq"}, "past.0": {0: "batch", 2: "past"}}
    dialog = DynamicShapesDialog({}, ["input_ids", "past.0"], [(1, 4), (1, 2, 3, 8)], proposed=proposed)
    qtbot.addWidget(dialog)
    assert not dialog.use_proposal.isHidden()
    qtbot.mouseClick(dialog.use_proposal, Qt.MouseButton.LeftButton)
    assert dialog.axes() == proposed
