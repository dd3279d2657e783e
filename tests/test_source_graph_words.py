"""The window speaks of the source graph and the ONNX graph in the words of the exporter that made
them: the left pane's header while the model opens and once it is drawn, the Inspector's labels
for a source node and for an ONNX node's origin, and its op info. Real widgets, real exports in the
shared worker, one small model under each exporter."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixport.gui.main_window import MainWindow
from tests.bad_input_bench import TINY_MODEL

JOB_TIMEOUT_MS = 120_000
SCREENSHOT_FOLDER_VARIABLE = "FIXPORT_SCREENSHOTS"  # where to save each exporter's window, when set

SMALL_MODEL = TINY_MODEL  # Linear then ReLU: one node of each kind in both graphs


@dataclass(frozen=True)
class Expected:
    """What the window says under one exporter, written out here (not read from the profile)."""

    opening: str
    title: str
    origin_label: str
    id_label: str | None  # the Inspector's row for a source node's id; None: no such row
    builtin_heading: str | None  # the Inspector's heading over the built-in opsets; None: no such heading
    foreign: str  # a word of the other exporter, which must not appear


EXPECTED = {
    "torchscript": Expected("TorchScript graph — tracing…", "TorchScript graph (traced) — ", "from TorchScript nodes",
                            "instance key", "Built-in symbolic at opsets", "FX"),
    "dynamo": Expected("FX graph — capturing (torch.export)…", "FX graph (torch.export) — ", "from FX nodes",
                       None, None, "TorchScript"),
}


def _select(qtbot, window: MainWindow, side: str, node_id: str) -> str:
    """Select a node as a click does; the Inspector's text (a table cell a line) once the worker's
    answers (a source node's op info) have come."""
    window.select_node(side, node_id)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=JOB_TIMEOUT_MS)
    return window.inspector.browser.toPlainText()


def _screenshot(window: MainWindow, exporter: str) -> None:
    """The window as drawn, into the folder FIXPORT_SCREENSHOTS names (for a person to look at)."""
    folder = os.environ.get(SCREENSHOT_FOLDER_VARIABLE)
    if folder:
        window.grab().save(str(Path(folder) / f"window_{exporter}.png"))


@pytest.mark.parametrize("exporter", list(EXPECTED))
def test_the_window_names_the_source_graph_as_its_exporter_does(qtbot, window: MainWindow, model_file,
                                                                 exporter: str) -> None:
    expected = EXPECTED[exporter]
    window.open_path(model_file("small.py", SMALL_MODEL), export_options={"exporter": exporter})
    assert window.graphs.left.header.text() == expected.opening
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=JOB_TIMEOUT_MS)
    analysis = window.workbench.analysis
    assert analysis is not None and analysis.options.exporter == exporter, window.log.contents()
    source, onnx_graph = window.graphs.graphs["source"], window.graphs.graphs["onnx"]
    assert source is not None and onnx_graph is not None
    assert window.graphs.left.header.text() == f"{expected.title}{len(source.nodes)} nodes"
    assert window.graphs.right.header.text() == f"ONNX (exported) — {len(onnx_graph.nodes)} nodes"

    made_from_source = next(node for node in onnx_graph.nodes if node.origin)
    onnx_rows = _select(qtbot, window, "onnx", made_from_source.id)
    assert f"{expected.origin_label}\n{', '.join(made_from_source.origin)}" in onnx_rows
    assert "graph\nONNX\n" in onnx_rows
    assert window.graphs.left.pane.selection == made_from_source.origin  # its counterparts, by side

    source_node = source.node_by_id[made_from_source.origin[0]]
    source_rows = _select(qtbot, window, "source", source_node.id)
    assert "Schema" in source_rows  # the worker's op info arrived
    assert f"graph\n{expected.title.removesuffix(' — ')}\n" in source_rows
    if expected.id_label:
        assert f"{expected.id_label}\n{source_node.id}" in source_rows
    if expected.builtin_heading:
        assert expected.builtin_heading in source_rows
    else:
        assert "instance key" not in source_rows and "symbolic" not in source_rows.lower()
    for text in (window.graphs.left.header.text(), onnx_rows, source_rows):
        assert not re.search(rf"\b{expected.foreign}\b", text), text
    _screenshot(window, exporter)
