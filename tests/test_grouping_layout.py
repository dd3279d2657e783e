"""Grouping and layout (no Qt): groups from scopes and ONNX names, chunking, aggregation, layout."""
from __future__ import annotations

import numpy as np
import pytest

from fixport.core.panes.grouping import (
    GroupTree,
    default_expanded,
    visible_items,
)
from fixport.core.panes.layout import LayoutCache, compute_layout
from fixport.core.panes.layout_constants import (
    DEFAULT_VISIBLE_BUDGET,
    MAX_GROUP_CHILDREN,
)
from fixport.core.words.cancel import Cancelled
from fixport.core.words.graph import Graph, Node, Value
from fixport.core.words.vocabulary import scope_from_onnx_name


def chain_graph(scopes: list[str], kind: str = "torchscript", onnx_names: bool = False) -> Graph:
    """A chain n0 -> n1 -> ... with one scope per node (or ONNX '/scope/Op' names)."""
    graph = Graph(kind=kind)  # type: ignore[arg-type]
    previous = "input"
    graph.values["input"] = Value("input", "float32", (1, 8))
    for index, scope in enumerate(scopes):
        name = f"/{scope}/Relu_{index}" if onnx_names and scope else f"Relu_{index}"
        out = f"t{index}"
        graph.values[out] = Value(out, "float32", (1, 8))
        graph.nodes.append(Node(id=f"n{index}", kind="onnx::Relu", name=name, inputs=[previous], outputs=[out],
                                scope="" if onnx_names else scope))
        previous = out
    return graph


def wide_graph(width: int, depth: int) -> Graph:
    """``depth`` layers of ``width`` nodes, each reading two nodes of the layer above."""
    graph = Graph(kind="onnx")
    for layer in range(depth):
        for column in range(width):
            inputs = [] if layer == 0 else [f"t{layer - 1}_{column}", f"t{layer - 1}_{(column * 7 + 3) % width}"]
            graph.nodes.append(Node(id=f"n{layer}_{column}", kind="onnx::Add", name=f"/block{layer // 2}/Add_{column}",
                                    inputs=inputs, outputs=[f"t{layer}_{column}"]))
    return graph


def test_groups_from_torchscript_scopes() -> None:
    tree = GroupTree(chain_graph(["layer1/0/conv1", "layer1/0/conv1", "layer1/0/bn1", "layer1/1/conv1",
                                  "layer1/1/conv1", "", "fc"]))
    assert tree.groups["layer1"].child_groups == ["layer1/0", "layer1/1/conv1"]  # a one-group chain merges
    assert tree.groups["layer1/1/conv1"].label == "1/conv1"
    assert tree.groups["layer1/0"].child_groups == ["layer1/0/conv1"]
    assert tree.groups["layer1/0"].node_indices == [2]  # the single-node group bn1 is dropped
    assert tree.groups["layer1"].node_count == 5
    assert "fc" not in tree.groups and 6 in tree.groups[""].node_indices
    assert tree.group_of_node("n0") == "layer1/0/conv1"
    assert tree.ancestors("layer1/0/conv1") == ["layer1", "layer1/0", "layer1/0/conv1"]


def test_groups_from_onnx_names_match_scopes() -> None:
    assert scope_from_onnx_name("/layer1/0/conv1/Conv") == "layer1/0/conv1"
    assert scope_from_onnx_name("Constant_12") == ""
    scopes = ["layer1/0/conv1", "layer1/0/conv1", "layer1/1/relu", "layer1/1/relu", "head"]
    from_names = GroupTree(chain_graph(scopes, "onnx", onnx_names=True))
    from_scopes = GroupTree(chain_graph(scopes))
    assert from_names.paths == from_scopes.paths


def test_chains_of_single_child_groups_merge() -> None:
    tree = GroupTree(chain_graph(["bert/encoder/layer/0"] * 2 + ["bert/encoder/layer/1"] * 2))
    assert tree.groups[""].child_groups == ["bert/encoder/layer"]
    assert tree.groups["bert/encoder/layer"].label == "bert/encoder/layer"


def test_groups_with_too_many_children_split_into_chunks() -> None:
    count = MAX_GROUP_CHILDREN * 2 + 500
    tree = GroupTree(chain_graph(["big"] * count + ["other"] * 2))
    big = tree.groups["big"]
    assert big.node_indices == []
    labels = [tree.groups[path].label for path in big.child_groups]
    assert labels == ["big[0..999]", "big[1000..1999]", "big[2000..2499]"]
    assert all(tree.groups[path].direct_children <= MAX_GROUP_CHILDREN for path in tree.paths)
    assert tree.groups[big.child_groups[1]].node_count == MAX_GROUP_CHILDREN
    assert tree.ancestors(tree.group_of_node("n1500")) == ["big", "big/big[1000..1999]"]


def test_edges_into_collapsed_groups_attach_to_the_box_and_merge() -> None:
    graph = chain_graph(["", "g", "g", "g", ""])
    graph.nodes[4].inputs.append("t1")  # a second edge g -> n4, and a second into g from n0
    graph.nodes[2].inputs.append("t0")
    tree = GroupTree(graph)
    items = visible_items(tree, frozenset())
    assert items.keys == ["n0", "g", "n4"]
    pairs = {(items.keys[s], items.keys[d]): c for s, d, c in zip(items.edge_src, items.edge_dst, items.edge_count)}
    assert pairs == {("n0", "g"): 2, ("g", "n4"): 2}
    expanded = visible_items(tree, frozenset({"g"}))
    assert expanded.keys == ["n0", "n1", "n2", "n3", "n4"]
    assert len(expanded.edge_src) == 6


def test_default_expanded_keeps_big_graphs_small() -> None:
    graph = chain_graph([f"stage{i // 2000}/block{i // 20}/layer{i % 3}" for i in range(8000)])
    tree = GroupTree(graph)
    expanded = default_expanded(graph, tree)
    assert 1 < len(visible_items(tree, expanded)) <= DEFAULT_VISIBLE_BUDGET
    small = chain_graph(["a", "a", "b", "b"])
    assert default_expanded(small) == frozenset({"a", "b"})


def _assert_no_overlap(layout) -> None:
    for rank in np.unique(layout.rank):
        members = np.flatnonzero(layout.rank == rank)
        order = members[np.argsort(layout.x[members])]
        left = layout.x[order] - layout.width[order] / 2
        right = layout.x[order] + layout.width[order] / 2
        assert np.all(left[1:] >= right[:-1] - 1e-6), f"overlap in rank {rank}"


@pytest.mark.parametrize("width,depth", [(6, 10), (60, 40)])
def test_layout_has_no_overlaps_and_edges_point_down(width: int, depth: int) -> None:
    graph = wide_graph(width, depth)
    layout = compute_layout(graph, frozenset({f"block{i}" for i in range(depth)}))
    assert len(layout.items) == width * depth
    _assert_no_overlap(layout)
    src, dst = layout.items.edge_src, layout.items.edge_dst
    assert np.all(layout.rank[dst] > layout.rank[src])
    starts = layout.edge_points[layout.edge_offsets[:-1]]
    ends = layout.edge_points[layout.edge_offsets[1:] - 1]
    assert np.allclose(starts[:, 1], layout.y[src] + layout.height[src] / 2)
    assert np.allclose(ends[:, 1], layout.y[dst] - layout.height[dst] / 2)
    assert layout.segments.shape[1] == 4 and len(layout.segment_edge) == len(layout.segments)


def test_collapsed_groups_are_bigger_boxes_without_overlap() -> None:
    graph = wide_graph(20, 12)
    layout = compute_layout(graph, frozenset())
    assert layout.items.is_group.all()
    assert np.all(layout.height > compute_layout(graph, frozenset({f"block{i}" for i in range(6)})).height.min())
    _assert_no_overlap(layout)


def test_layout_is_deterministic() -> None:
    graph = wide_graph(30, 20)
    expanded = frozenset({"block1", "block3"})
    first, second = compute_layout(graph, expanded), compute_layout(graph, expanded)
    assert first.items.keys == second.items.keys
    for name in ("x", "y", "width", "edge_points", "segments"):
        assert np.array_equal(getattr(first, name), getattr(second, name))


def test_cancel_raises_cancelled_and_progress_is_reported() -> None:
    graph = wide_graph(10, 10)
    with pytest.raises(Cancelled):
        compute_layout(graph, frozenset(), cancelled=lambda: True)
    seen: list[float] = []
    compute_layout(graph, frozenset(), progress=lambda fraction, message: seen.append(fraction))
    assert seen and seen == sorted(seen) and seen[-1] == 1.0


def test_layout_cache_hits_for_same_graph_and_expanded_set() -> None:
    cache = LayoutCache(max_entries=2)
    graph = wide_graph(5, 6)
    first = cache.layout(graph, frozenset({"block0"}))
    assert cache.layout(graph, frozenset({"block0"})) is first
    assert cache.hits == 1 and cache.misses == 1
    assert cache.layout(graph, frozenset()) is not first
    other = wide_graph(5, 6)
    assert cache.get(other, frozenset({"block0"})) is None  # another graph object never hits
    cache.layout(other, frozenset())
    assert cache.get(graph, frozenset({"block0"})) is None  # evicted (LRU of two)
