"""Selection sync between the two panes keeps working on big graphs (10k+ nodes, collapsed)."""
from __future__ import annotations

import copy

import pytest

from fixport.core.words.graph import Graph
from fixport.gui.graph_panes import SideBySideGraphs
from tests.test_graph_view import synthetic_graph

pytestmark = pytest.mark.qt_log_ignore(r"This plugin does not support propagateSizeHints")


def _torchscript_twin(onnx_graph: Graph) -> Graph:
    """A TorchScript-side graph with one node per ONNX node; ONNX origin points at it."""
    twin = copy.deepcopy(onnx_graph)
    twin.kind = "torchscript"
    for ts_node, onnx_node in zip(twin.nodes, onnx_graph.nodes):
        ts_node.id = f"ts:{onnx_node.id}"
        onnx_node.origin = [ts_node.id]
    return twin


@pytest.fixture
def panes(qtbot) -> SideBySideGraphs:
    widget = SideBySideGraphs()
    for kind in ("source", "onnx"):
        widget.pane(kind).synchronous = True
    qtbot.addWidget(widget)
    widget.resize(1400, 800)
    widget.show()
    return widget


def test_selecting_in_one_big_pane_selects_and_expands_in_the_other(panes: SideBySideGraphs) -> None:
    onnx_graph = synthetic_graph(blocks=1000, per_block=12)  # 12,000 nodes
    ts_graph = _torchscript_twin(onnx_graph)
    panes.set_graphs(ts_graph, onnx_graph, keep_view=False)
    onnx_pane, ts_pane = panes.pane("onnx"), panes.pane("source")
    assert len(onnx_pane.layout.items) < 1000  # opened collapsed
    target = onnx_graph.nodes[9_000]
    panes.select("onnx", [target.id])
    assert onnx_pane.selection == [target.id]
    assert ts_pane.selection == [f"ts:{target.id}"]  # the counterpart, in a group that had to open
    assert any(group in ts_pane.expanded for group in ts_pane.tree.ancestors(ts_pane.tree.group_of_node(
        f"ts:{target.id}")))


def test_search_finds_nodes_deep_in_collapsed_groups(panes: SideBySideGraphs) -> None:
    onnx_graph = synthetic_graph(blocks=1000, per_block=12)
    panes.set_graphs(_torchscript_twin(onnx_graph), onnx_graph, keep_view=False)
    hits = panes.pane("onnx").find("stage9/950/layer3")
    assert hits and all("950" in hit for hit in hits)
    assert panes.pane("onnx").selection == [hits[0]]
