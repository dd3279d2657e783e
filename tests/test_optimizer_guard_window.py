"""The optimizer guard in the window: the Compare dock's Optimize field, the variants' table with the
pass named, and the fix saved in the project."""
from __future__ import annotations

from fixport.gui.main_window import MainWindow
from tests.optimizer_guard_models import fusion_changing_seed, layer_norm_model_file
from tests.test_gui_flow import run_job


def test_the_compare_dock_shows_the_optimizer_table(qtbot, window: MainWindow, model_file) -> None:
    path = model_file("layer_norm_by_hand.py", layer_norm_model_file(fusion_changing_seed()))
    run_job(qtbot, window, lambda: window.open_path(path))
    window.compare.optimizers.optimize.setText("ort:basic,ort:extended")
    assert window.session.compare_optimize == "ort:basic,ort:extended"

    run_job(qtbot, window, window.actions["compare"].trigger)

    view = window.compare.optimizers
    assert view.table.isVisible()
    rows = {row[0]: row for row in view.rows()}
    assert rows["ort:basic"][1] == "pass" and rows["ort:basic"][5].endswith(" ms")
    assert rows["ort:extended"][1] == "changes outputs" and rows["ort:extended"][6] == "LayerNormFusionL2"
    assert rows["ort:extended"][7].endswith("(LayerNormalization)")
    assert "Saved in the project" in view.notes.text()
    assert window.workbench.project.optimizer_fixes == [
        {"tool": "ort", "level": "extended", "disabled": ["LayerNormFusionL2"]}]
