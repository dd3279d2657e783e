"""File ▸ Open sweep results…: a sweep's rows in a table; double-clicking one opens its model with its exporter."""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from tests.conftest import REPO

THRESHOLD = REPO / "examples" / "threshold.py"
JOB_TIMEOUT_MS = 240_000


def _sweep_file(path: Path) -> Path:
    from fixport.core.sweep.reports import write_json
    from fixport.core.sweep.rows import SweepRow, SweepSettings

    rows = [SweepRow(str(THRESHOLD), "torchscript", "problems", ["aten::threshold (symbolic_rejected)"],
                     verdict="not compared", message="1 problem(s) keep the export from running in ONNX Runtime",
                     seconds={"check": 1.5}, label="threshold.py"),
            SweepRow(str(THRESHOLD), "dynamo", "clean", opset=18, verdict="pass", max_abs=0.0,
                     seconds={"check": 2.0, "compare": 1.0}, label="threshold.py")]
    write_json(path, rows, SweepSettings(("torchscript", "dynamo")), {})
    return path


def test_sweep_results_open_and_a_row_opens_its_model(qtbot, window, tmp_path: Path) -> None:
    from fixport.gui.sweep_results import COLUMNS, show_sweep_results

    titles = [action.text() for action in window.menuBar().actions()[0].menu().actions()]
    assert "Open s&weep results…" in titles
    dialog = show_sweep_results(window, _sweep_file(tmp_path / "sweep.json"))
    assert dialog is not None and dialog.table.rowCount() == 2
    qtbot.addWidget(dialog)
    cells = [[dialog.table.item(row, column).text() for column in range(len(COLUMNS))] for row in range(2)]
    assert cells[0][:7] == ["threshold.py", "torchscript", "problems", "not compared", "—", "1.5",
                            "1: aten::threshold (symbolic_rejected)"]
    assert cells[1][3:6] == ["pass", "0.00e+00", "3.0"]
    dialog.table.sortItems(COLUMNS.index("verdict"))  # sorted, a row still opens its own model
    pass_row = next(row for row in range(2) if dialog.table.item(row, COLUMNS.index("verdict")).text() == "pass")
    assert dialog.row_at(pass_row).exporter == "dynamo"
    rect = dialog.table.visualItemRect(dialog.table.item(pass_row, 0))
    qtbot.mouseClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=JOB_TIMEOUT_MS)
    project = window.workbench.project
    assert Path(project.model_path) == THRESHOLD and project.export_options["exporter"] == "dynamo"
    assert window.actions.exporter.currentText() == "dynamo"
    dialog.close()


def test_a_file_that_is_not_a_sweep_is_an_error_in_the_window(window, tmp_path: Path) -> None:
    from fixport.gui.sweep_results import show_sweep_results

    other = tmp_path / "project.json"
    other.write_text(json.dumps({"format_version": 3}), encoding="utf-8")
    assert show_sweep_results(window, other) is None
    assert "not a sweep's results" in window.actions.banner.text()
