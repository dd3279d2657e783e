"""The networkx index over the neutral graph: neighbourhoods, paths and topological order."""
from __future__ import annotations

import pickle

from fixport.core.words.graph import Graph, Node


def diamond(nodes_in_file_order: str = "abcde") -> Graph:
    """a -> b -> d, a -> c -> d, d -> e; plus a lone node z. Nodes listed in the given order."""
    reads = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d"], "z": []}
    nodes = [Node(id=name, kind="onnx::Op", inputs=[f"{source}_out" for source in reads[name]],
                  outputs=[f"{name}_out"]) for name in nodes_in_file_order + "z"]
    return Graph(kind="onnx", nodes=nodes)


def test_upstream_and_downstream_follow_the_edges() -> None:
    graph = diamond()
    assert graph.upstream_of("d") == {"a", "b", "c"}
    assert graph.downstream_of("b") == {"d", "e"}
    assert graph.upstream_of("a") == set() and graph.downstream_of("z") == set()


def test_path_between_runs_in_data_flow_order_either_way_round() -> None:
    graph = diamond()
    assert graph.path_between("a", "e") in (["a", "b", "d", "e"], ["a", "c", "d", "e"])
    assert graph.path_between("e", "b") == ["b", "d", "e"]
    assert graph.path_between("b", "c") == []  # siblings: neither reaches the other
    assert graph.path_between("a", "z") == []


def test_nodes_between_holds_every_path() -> None:
    graph = diamond()
    assert graph.nodes_between("e", "a") == {"a", "b", "c", "d", "e"}
    assert graph.nodes_between("b", "e") == {"b", "d", "e"}
    assert graph.nodes_between("b", "c") == set()


def test_topological_order_puts_producers_first_and_keeps_a_sorted_file_order() -> None:
    assert diamond("acbde").topological_order == ["a", "c", "b", "d", "e", "z"]
    shuffled = diamond("edcba").topological_order  # consumers listed before their producers
    assert shuffled.index("a") < shuffled.index("b") < shuffled.index("d") < shuffled.index("e")
    assert shuffled.index("c") < shuffled.index("d")


def test_cached_index_is_not_pickled() -> None:
    graph = diamond()
    assert graph.topological_order
    state = graph.__getstate__()
    assert "index" not in state and "topological_order" not in state
    assert pickle.loads(pickle.dumps(graph)).downstream_of("d") == {"e"}


def test_divergence_search_follows_data_flow_not_list_order() -> None:
    from fixport.core.comparison.intermediates import find_first_divergent, mark_inherited_errors
    from fixport.core.records.compare_result import NodeAnalysis, NodeError

    graph = diamond("edcba")  # consumers listed before their producers

    def error(node_id: str, exceeds: bool) -> NodeError:
        return NodeError(node_id, "onnx::Op", f"{node_id}_out", node_id, "aten::op", "", "", "", (1,), "float32",
                         1.0 if exceeds else 0.0, 0.0, 0.0, 1e-5, 1e-5, exceeds)

    analysis = NodeAnalysis(run=0, nodes=[error("e", True), error("d", True), error("b", True), error("a", False)])
    mark_inherited_errors(graph, analysis.nodes)
    assert [e.inputs_exceed for e in analysis.nodes] == [True, True, False, False]
    assert find_first_divergent(analysis, graph).onnx_node == "b"
