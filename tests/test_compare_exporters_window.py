"""Run ▸ Compare exporters in the window: the job off the UI thread, the report in its dock, a click
on a value where the two exports differ selects its node in the ONNX pane (real widgets, real exports);
Fix all's summary with the export's size and latency with the fixes and without them."""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.records.runtime_cost import RuntimeCost, cost_change
from fixport.core.session.fix_all import plan_from
from fixport.examples.catalog import example_path
from fixport.gui.main_window import MainWindow
from tests.test_compare_exporters import SOFTPLUS_MODEL, THRESHOLD_MODEL
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
    torchscript_pane, dynamo_pane = dock.graph_panes  # both exports side by side, the row selected in both
    qtbot.waitUntil(lambda: torchscript_pane.selection == [first.onnx_nodes["torchscript"]]
                    and dynamo_pane.selection == [first.onnx_nodes["dynamo"]], timeout=10_000)
    dynamo_pane.select_nodes([])
    torchscript_pane.node_clicked.emit(first.onnx_nodes["torchscript"])  # a click in one pane: its counterpart
    qtbot.waitUntil(lambda: dynamo_pane.selection == [first.onnx_nodes["dynamo"]], timeout=10_000)
    drawn = {node.id for node in dynamo_pane.graph.nodes if node.id in result.run_of("dynamo").onnx_graph.node_by_id}
    assert first.onnx_nodes["dynamo"] in drawn and len(drawn) >= 5  # the dynamo export's own graph
    assert "Compare exporters" in window.log.contents()


def test_fix_all_times_the_export_with_and_without_the_fixes(worker, model_file) -> None:
    path = model_file("threshold.py", THRESHOLD_MODEL)
    result = worker.run(AutoFixRequest(ModelRequest(str(path)), latency_runs=3))
    assert result.mappings and result.cost_after.latency_runs == 3 and result.cost_after.latency_ms > 0
    assert result.cost_before is None  # the plain TorchScript export does not convert the threshold
    summary = plan_from(ExporterRun.from_auto_fix(result), []).summary()
    assert "With the fixes: " in summary and "the export without them does not run in ONNX Runtime" in summary

    assert worker.run(AutoFixRequest(ModelRequest(str(path)))).cost_after is None  # `fix --auto` does not time

    both = worker.run(AutoFixRequest(ModelRequest(str(example_path("nan_gap_max_dynamo"))), latency_runs=3))
    assert both.mappings and both.cost_before.latency_ms > 0 and both.cost_after.latency_ms > 0  # a mismatch: it runs
    assert "; without them: " in plan_from(ExporterRun.from_auto_fix(both), []).summary()
    slower = cost_change(RuntimeCost(1000, 5, 1.0, 3), RuntimeCost(1100, 9, 2.0, 3))
    assert slower == "size ×1.10, latency ×2.00 (notably slower)"
