"""Run ▸ Compare exporters in the window: the job off the UI thread, the report in its dock, a click
on a value where the two exports differ selects its node in the ONNX pane (real widgets, real exports)."""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from fixport.gui.main_window import MainWindow
from tests.test_compare_exporters import SOFTPLUS_MODEL
from tests.test_gui_flow import run_job


def test_compare_exporters_shows_where_the_two_exports_differ(qtbot, window: MainWindow, model_file) -> None:
    run_job(qtbot, window, lambda: window.open_path(model_file("softplus.py", SOFTPLUS_MODEL)))
    assert window.workbench.analysis is not None, window.log.contents()
    dock = window.exporter_comparison
    assert not dock.isVisible()
    window.select_node("onnx", window.graphs.graphs["onnx"].nodes[0].id)  # somewhere else first

    run_job(qtbot, window, window.actions["compare_exporters"].trigger)
    result = dock.result
    assert result is not None, window.log.contents()
    assert dock.isVisible() and "disagree" in dock.summary.text() and "softplus.py:14" in dock.summary.text()
    assert [dock.exporters_table.item(row, 0).text() for row in range(2)] == ["torchscript", "dynamo"]
    assert [dock.exporters_table.item(row, 1).text() for row in range(2)] == ["FAIL", "PASS"]
    assert dock.exporters_table.item(0, 7).text().endswith(" ms")  # latency
    assert dock.outputs_table.item(0, 4).text() == "DIFFER"
    assert dock.differing_rows()[0] == 0 and "softplus.py:14" in dock.nodes_table.item(0, 0).text()
    first = result.first_difference
    assert window.graphs.right.pane.selection == [first.onnx_nodes["torchscript"]]  # marked on arrival

    window.select_node("onnx", window.graphs.graphs["onnx"].nodes[0].id)
    table = dock.nodes_table
    rect = table.visualItemRect(table.item(0, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 8, rect.center().y()))
    qtbot.waitUntil(lambda: window.graphs.right.pane.selection == [first.onnx_nodes["torchscript"]], timeout=5000)
    assert "Compare exporters" in window.log.contents()
