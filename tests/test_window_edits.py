"""Every edit the window's toolbar and dialogs make goes through the session: one ProjectEdited
event each (the window's state follows from it), none written to the workbench behind its back."""
from __future__ import annotations

from fixport.core.session import events
from fixport.gui.main_window import MainWindow
from fixport.gui.window_actions import set_dynamic_shapes, set_shapes_to_check
from tests.test_compare_exporters import CHOOSES_DYNAMO, PLAIN_MODEL
from tests.test_gui_flow import run_job


def test_toolbar_and_dialog_edits_are_session_events(qtbot, window: MainWindow, model_file) -> None:
    run_job(qtbot, window, lambda: window.open_path(model_file("plain.py", PLAIN_MODEL)))
    assert window.workbench.analysis is not None, window.log.contents()
    edits: list[str] = []
    window.session.events.subscribe(events.ProjectEdited, lambda event: edits.append(event.what))

    run_job(qtbot, window, lambda: window.actions.opset.setValue(16))
    run_job(qtbot, window, lambda: window.actions.export_type.setCurrentText("ONNX_FALLTHROUGH"))
    run_job(qtbot, window, lambda: set_shapes_to_check(window, ["x=2x3x8x8"]))
    run_job(qtbot, window, lambda: set_dynamic_shapes(window, {}))
    run_job(qtbot, window, lambda: window.actions.exporter.setCurrentText("dynamo"))
    assert edits == ["opset", "operator_export_type", "shapes_to_check", "dynamic shapes", "exporter"]
    assert window.workbench.project.export_options["opset"] == 16 and window.workbench.analysis is not None


def test_an_edit_keeps_the_exporter_a_model_file_chooses_in_the_toolbar(qtbot, window: MainWindow,
                                                                        model_file) -> None:
    """The toolbar follows the session's one answer for the exporter (the file's own choice too), so
    an edit that says the project changed does not show the default exporter meanwhile."""
    run_job(qtbot, window, lambda: window.open_path(model_file("chooses_dynamo.py", PLAIN_MODEL + CHOOSES_DYNAMO)))
    assert window.actions.exporter.currentText() == "dynamo", window.log.contents()
    window.session.set_project_field("shapes_to_check", [])
    assert window.actions.exporter.currentText() == "dynamo"
