"""Which fix converts a node: one precedence (a fix for the node over a fix for its kind, a fix
naming its Function over one for any Function), asked by the window and by Compare alike."""
from __future__ import annotations

from fixport.core.project.project import FixMapping, Project, mapping_for
from fixport.core.words.graph import Graph, Node


def _mapping(template_id: str, instance: str | None = None, kind: str = "aten::threshold",
             python_op_name: str | None = None) -> FixMapping:
    return FixMapping(target_kind=kind, template_id=template_id, source="", instance=instance,
                      python_op_name=python_op_name)


def test_this_node_only_then_apply_to_all_keeps_the_nodes_own_fix() -> None:
    project = Project(model_path="m.py")
    project.set_mapping(_mapping("per_node", instance="a|1"))  # "to this node only"
    project.set_mapping(_mapping("per_kind"))  # then "Apply to all"
    first, second = Node("a|1", "aten::threshold"), Node("b|1", "aten::threshold")
    assert project.mapping_for(first).template_id == "per_node"
    assert project.mapping_for(second).template_id == "per_kind"
    assert project.mapping_for(Node("c|1", "aten::relu")) is None


def test_the_order_of_the_mappings_does_not_matter() -> None:
    forward = [_mapping("per_kind"), _mapping("per_node", instance="a|1")]
    for mappings in (forward, forward[::-1]):
        assert mapping_for(mappings, "aten::threshold", "a|1").template_id == "per_node"
        assert mapping_for(mappings, "aten::threshold", "z|9").template_id == "per_kind"


def test_a_fix_naming_the_function_wins_over_one_for_any_function() -> None:
    mappings = [_mapping("any", kind="prim::PythonOp"), _mapping("clip", kind="prim::PythonOp", python_op_name="Clip")]
    assert mapping_for(mappings, "prim::PythonOp", "n|1", "Clip").template_id == "clip"
    assert mapping_for(mappings, "prim::PythonOp", "n|1", "Gate").template_id == "any"
    assert mapping_for([_mapping("clip", kind="prim::PythonOp", python_op_name="Clip")],
                       "prim::PythonOp", "n|1", "Gate") is None


def test_compare_labels_each_node_with_the_fix_that_converts_it() -> None:
    from fixport.core.comparison.compare_job import templates_by_node

    graph = Graph("torchscript", [Node("a|1", "aten::threshold"), Node("b|1", "aten::threshold")])
    mappings = [_mapping("per_node", instance="a|1"), _mapping("per_kind")]
    assert templates_by_node(graph, mappings) == {"a|1": "per_node", "b|1": "per_kind"}
