"""Shapes to check, given in the window (Run > Shapes to check…) as on the command line (--shapes):
one parser in core, saved in the project, carried by the analysis and Compare requests, and a
name the model lacks refused in words the window's user can act on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from fixport.core.foundation.errors import InputSpecError
from fixport.core.project.project import Project, load_project, project_from_json, save_project
from fixport.core.project.shape_sets import for_the_window, parse_shape_lines, parse_shape_set, shape_names_error
from fixport.core.session.workbench import Workbench
from fixport.core.words.errors import ProjectError, ShapeNamesError
from fixport.gui.shapes_dialog import ShapesDialog
from fixport.gui.window_actions import set_shapes_to_check
from tests.test_declared_shapes import BAKED_LENGTH_MODEL
from tests.test_gui_flow import run_job


def _baked_model(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(BAKED_LENGTH_MODEL, encoding="utf-8")
    return path


# ---- core, no Qt ----
def test_the_windows_lines_parse_as_the_command_line_reads_each_set() -> None:
    assert parse_shape_lines(["x=3x12,y=3x5", "", "  x=1x4  "]) == [{"x": (3, 12), "y": (3, 5)}, {"x": (1, 4)}]
    assert parse_shape_lines([]) == []
    with pytest.raises(InputSpecError) as bad:
        parse_shape_lines(["x=3x12", "x=3y12"])
    assert bad.value.message == "Line 2: cannot read the input specification 'x=3y12'."
    assert bad.value.hint.startswith("Write each line as NAME=DIMS[,NAME=DIMS], for example x=3x12")
    with pytest.raises(InputSpecError) as zero:
        parse_shape_lines(["x=0x3"])
    assert zero.value.message.startswith("Line 1: the input 'x=0x3' has a zero dimension")
    with pytest.raises(InputSpecError) as cli:  # what --shapes says, unchanged
        parse_shape_set("x=3y12")
    assert cli.value.message == "Cannot read the input specification 'x=3y12'."


def test_a_wrong_name_is_worded_for_the_command_line_and_for_the_window() -> None:
    error = shape_names_error(["y"], ["x"], "x=2x8")
    assert error.user_text() == ("--shapes names y, but the model's inputs are x.\n"
                                 "  → Name the model's inputs, e.g. x=2x8.")
    shown = for_the_window(error)
    assert isinstance(shown, ShapeNamesError)
    assert shown.user_text() == ("The shapes to check name y, but the model's inputs are x.\n"
                                 "  → Name the model's inputs in Run > Shapes to check…, e.g. x=2x8.")


def test_the_project_keeps_its_shapes_and_old_files_still_open(tmp_path: Path) -> None:
    model = _baked_model(tmp_path)
    path = tmp_path / "p.fixport.json"
    save_project(Project(model_path=str(model), shapes_to_check=["x=4x20", "x=1x3"]), path)
    loaded = load_project(path)
    assert loaded.shapes_to_check == ["x=4x20", "x=1x3"]
    assert loaded.other_shapes() == [{"x": (4, 20)}, {"x": (1, 3)}]
    old = project_from_json({"format_version": 3, "app": "fixport", "model_path": "m.py", "export_options": {}})
    assert old.shapes_to_check == [] and old.other_shapes() == []
    with pytest.raises(ProjectError, match="shapes_to_check"):
        project_from_json({"format_version": 3, "model_path": "m.py", "shapes_to_check": "x=3"})


def test_the_workbench_asks_the_worker_for_the_projects_shapes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "autosave")
    bench = Workbench()
    bench.open_model(_baked_model(tmp_path))
    assert bench.analyze_request().other_shapes == []
    bench.set_project_field("shapes_to_check", ["x=4x20"])
    assert bench.analyze_request().other_shapes == [{"x": (4, 20)}]


# ---- the window ----
def _fill_shapes_dialog(qtbot, attempts: list[str], seen: dict[str, list[str]]) -> None:
    """Once the dialog is up: type each attempt and press OK, noting the error it shows ('' once it closes)."""
    def step() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, ShapesDialog):
            QTimer.singleShot(20, step)
            return
        seen["hint"] = [dialog.hint.text()]
        for text in attempts:
            dialog.editor.setPlainText(text)
            qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
            seen["errors"].append(dialog.error.text() if dialog.isVisible() else "")
        if dialog.isVisible():
            dialog.reject()  # never leave the test waiting on a modal dialog
    seen["errors"] = []
    QTimer.singleShot(0, step)


def test_shapes_given_in_the_window_are_checked_and_compared(qtbot, window, tmp_path: Path) -> None:
    run_job(qtbot, window, lambda: window.open_path(_baked_model(tmp_path)))
    assert any("batch=3, len=12" in note for note in window.workbench.analysis.notes)  # the derived sizes

    seen: dict[str, list[str]] = {}
    _fill_shapes_dialog(qtbot, ["x=4y20", "y=3", "x=4x20"], seen)
    run_job(qtbot, window, window.actions["shapes"].trigger)
    assert "The model's inputs (traced shape): x (2x8)" in seen["hint"][0]
    unreadable, wrong_name, accepted = seen["errors"]
    assert unreadable.startswith("Line 1: cannot read the input specification 'x=4y20'."), unreadable
    assert wrong_name.startswith("Line 1: the shapes to check name y, but the model's inputs are x."), wrong_name
    assert accepted == ""

    assert window.workbench.project.shapes_to_check == ["x=4x20"]
    analysis = window.workbench.analysis
    assert "Also checked at other sizes: x=4x20." in analysis.notes, analysis.notes
    assert not any("batch=3, len=12" in note for note in analysis.notes)
    (problem,) = analysis.unsupported
    assert problem.message.startswith("At x=4x20 (inputs 4x20)"), problem.message
    assert "Shapes to check: x=4x20; analysing again." in window.log.contents()

    run_job(qtbot, window, window.actions["compare"].trigger)
    choice = window.compare.run_choice
    labels = [choice.itemText(i) for i in range(choice.count())]
    assert "x=4x20" in labels and "batch=3, len=12" not in labels, labels


def test_a_name_the_model_lacks_is_shown_and_can_be_fixed(qtbot, window, tmp_path: Path) -> None:
    project_path = tmp_path / "saved.fixport.json"
    save_project(Project(model_path=str(_baked_model(tmp_path)), shapes_to_check=["y=3"]), project_path)
    run_job(qtbot, window, lambda: window.open_path(project_path))
    banner = window.actions.banner.text()
    assert "The shapes to check name y, but the model's inputs are x." in banner, banner
    assert "Name the model's inputs in Run > Shapes to check…, e.g. x=2x8." in banner
    assert window.actions.banner.isVisible()
    assert window.workbench.project.shapes_to_check == ["y=3"]  # kept for the user to correct

    run_job(qtbot, window, lambda: set_shapes_to_check(window, ["x=4x20"]))
    assert window.workbench.analysis is not None and not window.actions.banner.isVisible()
    assert "Also checked at other sizes: x=4x20." in window.workbench.analysis.notes


def test_the_dialog_keeps_what_is_set_and_empty_means_the_derived_sizes(qtbot) -> None:
    dialog = ShapesDialog(["x=4x20"], [], [])
    qtbot.addWidget(dialog)
    assert dialog.editor.toPlainText() == "x=4x20"
    assert "once it has been analysed" in dialog.hint.text()
    dialog.editor.setPlainText("\n  \n")
    dialog.accept()
    assert dialog.result() == ShapesDialog.DialogCode.Accepted and dialog.lines() == []


def test_a_project_with_shapes_it_cannot_read_says_so_without_exporting(qtbot, window, tmp_path: Path) -> None:
    project_path = tmp_path / "typo.fixport.json"
    data = Project(model_path=str(_baked_model(tmp_path)), shapes_to_check=["x=4y20"]).to_json(project_path)
    project_path.write_text(json.dumps(data), encoding="utf-8")
    window.open_path(project_path)
    assert "Line 1: cannot read the input specification 'x=4y20'." in window.actions.banner.text()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=60_000)  # the worker's warm-up ping, if any
    assert window.workbench.analysis is None  # nothing was exported
