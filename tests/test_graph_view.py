"""GraphPane: opens big graphs collapsed, expands, finds, selects into groups, marks, tooltips."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor

from fixport.core.panes.grouping import ROOT, tree_for
from fixport.core.panes.layout_constants import DEFAULT_VISIBLE_BUDGET
from fixport.core.words.graph import Graph, Node, Value, display_graph
from fixport.gui.graph_style import UNSUPPORTED_FILL
from fixport.gui.graph_view import GraphPane

# The offscreen platform plugin says this whenever a top-level widget is shown; it is not ours.
pytestmark = pytest.mark.qt_log_ignore(r"This plugin does not support propagateSizeHints")


def synthetic_graph(blocks: int = 400, per_block: int = 12) -> Graph:
    """Residual blocks under 'model/stage{s}/{b}/...' scopes, ONNX style names."""
    graph = Graph(kind="onnx")
    graph.values["input"] = Value("input", "float32", (1, 64, 32, 32))
    previous = "input"
    for block in range(blocks):
        scope = f"model/stage{block // 100}/{block}"
        block_input = previous
        for index in range(per_block):
            out = f"t{block}_{index}"
            graph.values[out] = Value(out, "float32", (1, 64, 32, 32))
            inputs = [previous, block_input] if index == per_block - 1 else [previous]
            op = "Add" if index == per_block - 1 else ("Conv" if index % 2 == 0 else "Relu")
            name = f"/{scope}/layer{index // 3}/{op}_{index}"
            graph.nodes.append(Node(id=name, kind=f"onnx::{op}", name=name, inputs=inputs, outputs=[out]))
            previous = out
    return graph


@pytest.fixture
def pane(qtbot) -> GraphPane:
    widget = GraphPane(synchronous=True)
    qtbot.addWidget(widget)
    widget.resize(900, 700)
    widget.show()
    return widget


def test_big_graph_opens_collapsed_and_expands(pane: GraphPane) -> None:
    graph = synthetic_graph()
    pane.set_graph_sync(graph)
    items = len(pane.layout.items)
    assert 1 < items <= DEFAULT_VISIBLE_BUDGET < len(graph.nodes)
    collapsed = [k for k, g in zip(pane.layout.items.keys, pane.layout.items.is_group) if g]
    assert collapsed
    pane.expand_group(collapsed[0])
    assert collapsed[0] in pane.expanded and len(pane.layout.items) > items
    pane.collapse_group(collapsed[0])
    assert len(pane.layout.items) == items
    pane.expand_all()
    assert len(pane.layout.items) == len(graph.nodes)
    pane.collapse_all()
    assert pane.expanded == frozenset()


def test_set_graph_lays_out_on_a_worker(qtbot) -> None:
    widget = GraphPane()
    qtbot.addWidget(widget)
    with qtbot.waitSignal(widget.layout_applied, timeout=10_000):
        widget.set_graph(synthetic_graph(50))
    assert widget.layout is not None and widget.view.graph_item is not None


def _viewport_centre(pane: GraphPane) -> QPointF:
    return pane.view.mapToScene(pane.view.viewport().rect().center())


def test_find_selects_and_centres_the_first_hit(pane: GraphPane) -> None:
    graph = synthetic_graph()
    pane.set_graph_sync(graph)
    hits = pane.find("STAGE3/350/layer1/relu")
    assert hits and all("stage3/350/layer1/relu" in h.lower() for h in hits)
    assert pane.selection == [hits[0]]
    index = pane.layout.index_of(hits[0])
    assert index is not None and pane.view.graph_item.selected[index]
    centre = _viewport_centre(pane)
    assert abs(centre.x() - pane.layout.x[index]) < 2 and abs(centre.y() - pane.layout.y[index]) < 2
    assert pane.find("no such node") == []


def test_select_nodes_inside_a_collapsed_group_expands_it(pane: GraphPane, qtbot) -> None:
    graph = synthetic_graph()
    pane.set_graph_sync(graph)
    target = graph.nodes[-5].id
    assert pane.layout.index_of(target) is None
    with qtbot.assertNotEmitted(pane.selection_changed):
        pane.select_nodes([target])
    assert pane.layout.index_of(target) is not None
    assert set(tree_for(graph).ancestors(tree_for(graph).group_of_node(target))) <= pane.expanded


def test_unsupported_nodes_are_red_with_a_badge(pane: GraphPane) -> None:
    graph = synthetic_graph(3, 6)
    graph.nodes[4].unsupported = True
    pane.set_graph_sync(graph, frozenset(tree_for(graph).all_groups()))
    pane.view.resetTransform()
    item = pane.view.graph_item
    index = pane.layout.index_of(graph.nodes[4].id)
    assert item.unsupported[index]
    pane.view.centerOn(pane.layout.x[index], pane.layout.y[index])
    image = pane.view.viewport().grab().toImage()
    point = pane.view.mapFromScene(QPointF(pane.layout.x[index] - 20, pane.layout.y[index] + 12))
    assert image.pixelColor(point) == QColor(UNSUPPORTED_FILL)
    # Collapsed, the group holding it carries the mark instead.
    pane.set_marks(unsupported={graph.nodes[1].id})
    pane.collapse_all()
    assert pane.view.graph_item.unsupported.sum() >= 1


def test_a_big_graph_opens_on_its_first_problem_else_on_its_first_input(pane: GraphPane) -> None:
    graph = synthetic_graph(60, 12)
    graph.inputs = ["input"]
    pane.set_graph_sync(display_graph(graph))
    first_input = pane._item_index("input:input")
    assert first_input is not None
    assert abs(_viewport_centre(pane).x() - pane.layout.x[first_input]) < 2
    flagged = graph.nodes[len(graph.nodes) * 2 // 3]
    flagged.unsupported = True
    pane.set_graph_sync(display_graph(graph))
    index = pane._item_index(flagged.id)
    centre = _viewport_centre(pane)
    assert abs(centre.x() - pane.layout.x[index]) < 2 and abs(centre.y() - pane.layout.y[index]) < 2


def test_error_marks_and_first_divergent(pane: GraphPane) -> None:
    graph = synthetic_graph(2, 6)
    pane.set_graph_sync(graph, frozenset(tree_for(graph).all_groups()))
    pane.set_marks(errors={graph.nodes[2].id: 1.0}, first_divergent=graph.nodes[3].id, highlighted={graph.nodes[0].id})
    item = pane.view.graph_item
    assert item.fill[pane.layout.index_of(graph.nodes[2].id)] != item.base_fill[pane.layout.index_of(graph.nodes[2].id)]
    assert item.divergent == pane.layout.index_of(graph.nodes[3].id)
    assert item.highlighted[pane.layout.index_of(graph.nodes[0].id)]
    pane.view.viewport().grab()  # paints every mark without warnings


def test_edge_and_node_tooltips(pane: GraphPane) -> None:
    graph = synthetic_graph(2, 6)
    pane.set_graph_sync(graph, frozenset(tree_for(graph).all_groups()))
    layout = pane.layout
    edge = 0
    a, b = layout.edge_points[layout.edge_offsets[edge]], layout.edge_points[layout.edge_offsets[edge] + 1]
    middle = QPointF(*((a + b) / 2))
    text = pane.view.graph_item.tooltip_at(middle, 3.0)
    value = graph.value(layout.items.edge_value[edge])
    assert value.name in text and "float32[1,64,32,32]" in text
    node = graph.nodes[0]
    index = layout.index_of(node.id)
    node_text = pane.view.graph_item.tooltip_at(QPointF(layout.x[index], layout.y[index]), 3.0)
    assert node.kind in node_text and node.name in node_text


def test_keep_view_keeps_the_transform(pane: GraphPane) -> None:
    graph = synthetic_graph(20, 6)
    pane.set_graph_sync(graph)
    pane.view.resetTransform()
    pane.view.scale(1.7, 1.7)
    pane.view.centerOn(150.0, 400.0)
    before_transform, before_centre = pane.view.transform(), _viewport_centre(pane)
    pane.set_graph_sync(synthetic_graph(20, 6), keep_view=True)  # a re-export: new graph object
    assert pane.view.transform() == before_transform
    after = _viewport_centre(pane)
    assert abs(after.x() - before_centre.x()) < 1 and abs(after.y() - before_centre.y()) < 1


def test_clicking_a_node_emits_and_double_clicking_a_group_expands(pane: GraphPane, qtbot) -> None:
    graph = synthetic_graph(3, 6)
    pane.set_graph_sync(graph, frozenset())
    group = pane.layout.items.keys[0]
    assert pane.layout.items.is_group[0] and group != ROOT
    pane.view.item_double_clicked.emit(0)
    assert group in pane.expanded
    pane.expand_all()
    index = pane.layout.index_of(graph.nodes[0].id)
    with qtbot.waitSignals([pane.node_clicked, pane.selection_changed]):
        pane.view.item_clicked.emit(index, False)
    assert pane.selection == [graph.nodes[0].id]


def test_ctrl_f_focuses_the_search_field(pane: GraphPane, qtbot) -> None:
    pane.set_graph_sync(synthetic_graph(3, 6))
    pane.activateWindow()
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(pane.search.hasFocus, timeout=2000)


def test_zoomed_out_big_graph_paints_batched(pane: GraphPane) -> None:
    graph = synthetic_graph(400, 12)
    pane.set_graph_sync(graph, frozenset(tree_for(graph).all_groups()))
    pane.view.resetTransform()
    pane.view.scale(0.01, 0.01)
    pane.view.viewport().grab()
    stats = pane.render_stats()
    assert stats["boxes"] > 500 and stats["paint_s"] < 1.0
    assert np.isfinite(pane.layout.x).all()


def test_select_nodes_while_laying_out_waits_for_the_layout(qtbot) -> None:
    widget = GraphPane()
    qtbot.addWidget(widget)
    graph = synthetic_graph()
    target = graph.nodes[-3].id
    widget.set_graph(graph)
    widget.select_nodes([target])
    qtbot.waitUntil(lambda: widget.layout is not None and widget.layout.index_of(target) is not None, timeout=10_000)
    assert widget.selection == [target]


def _menu_action(pane: GraphPane, index: int | None, text: str):
    menu = pane.context_menu(index)
    actions = {action.text(): action for action in menu.actions()}
    assert text in actions, list(actions)
    return actions[text]


def test_context_menu_selects_upstream_downstream_and_between(qtbot, pane: GraphPane) -> None:
    reads = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d"]}
    graph = Graph(kind="onnx", nodes=[Node(id=n, kind="onnx::Relu", name=n, inputs=[f"{s}_out" for s in sources],
                                           outputs=[f"{n}_out"]) for n, sources in reads.items()])
    pane.set_graph(graph)
    with qtbot.waitSignal(pane.selection_changed) as emitted:
        _menu_action(pane, pane.layout.index_of("d"), "Select upstream").trigger()
    assert pane.selection == ["d", "a", "b", "c"] and emitted.args == [pane.selection]
    _menu_action(pane, pane.layout.index_of("b"), "Select downstream").trigger()
    assert pane.selection == ["b", "d", "e"]
    pane.select_nodes(["e", "a"])
    _menu_action(pane, None, "Select paths between the two selected").trigger()
    assert pane.selection == ["e", "a", "b", "c", "d"]
    pane.select_nodes(["b", "c"])  # siblings: neither reaches the other, the selection stays
    _menu_action(pane, None, "Select paths between the two selected").trigger()
    assert pane.selection == ["b", "c"]
    pane.select_nodes(["a"])
    assert "Select paths between the two selected" not in [a.text() for a in pane.context_menu(None).actions()]
