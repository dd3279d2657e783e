"""The regression corpus: every example declares the unsupported kinds it must produce, and a
real export through the worker finds exactly those, with their reasons, in one run."""
from __future__ import annotations

from collections import Counter

import pytest

from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import ExampleInfo, list_examples

EXAMPLES = list_examples()


def _expected(example: ExampleInfo) -> Counter:
    return Counter({(e["kind"], e["reason"], e.get("name", "")): e.get("count", 1)
                    for e in example.expected_unsupported})


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_reports_exactly_its_declared_problems(worker, example: ExampleInfo) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example.path))))
    found = Counter((p.kind, p.reason, p.python_op_name) for p in result.unsupported)
    assert found == _expected(example)
    assert result.options.opset == example.opset
    for problem in result.unsupported:
        assert problem.message and problem.instance
        assert problem.instance in result.source_graph.node_by_id
    placeholders = [n for n in result.onnx_graph.nodes if n.unsupported]
    # a model that runs but differs (here, at another declared shape or at other input values) has no placeholder
    assert len(placeholders) == sum(n for (_, reason, _), n in found.items()
                                    if reason not in ("mismatch", "shape_specialised", "baked_input"))
    assert all(n.origin for n in placeholders)


def test_first_supported_opset_is_reported(worker) -> None:
    vit = next(e for e in EXAMPLES if e.name == "vit_tiny")
    result = worker.run(AnalyzeRequest(ModelRequest(str(vit.path))))
    first = {p.kind: p.first_supported_opset for p in result.unsupported}
    assert first == {"aten::unflatten": 13, "aten::scaled_dot_product_attention": 14}
    fixed = worker.run(AnalyzeRequest(ModelRequest(str(vit.path)), options={"opset": 14}))
    assert fixed.unsupported == []


def test_provenance_links_onnx_nodes_to_torchscript_nodes(worker) -> None:
    resnet = next(e for e in EXAMPLES if e.name == "resnet18_clean")
    result = worker.run(AnalyzeRequest(ModelRequest(str(resnet.path))))
    ts_ids = set(result.source_graph.node_by_id)
    convs = [n for n in result.onnx_graph.nodes if n.op_type == "Conv"]
    assert len(convs) == 20
    assert all(n.origin and n.origin[0] in ts_ids for n in convs)
    assert {result.source_graph.node_by_id[n.origin[0]].kind for n in convs} == {"aten::_convolution"}
    conv1 = next(n for n in convs if n.name == "/conv1/Conv")
    assert result.source_graph.node_by_id[conv1.origin[0]].scope == "conv1"


def test_runtime_errors_name_the_onnx_and_torchscript_node(worker, model_file) -> None:
    path = model_file("custom_domain.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.asinh(x) * 2

        def build():
            return Model(), (torch.rand(2, 3),)

        # A symbolic that exports fine but targets a plugin domain ONNX Runtime does not have.
        torch.onnx.register_custom_op_symbolic(
            "aten::asinh", lambda g, x: g.op("rknn_cst::Asinh", x), 9)
    """)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), options={"opset": 12}))
    (problem,) = result.unsupported
    assert problem.reason == "runtime_error"
    assert problem.kind == "aten::asinh"
    assert "rknn_cst" in problem.message and problem.onnx_node


def test_runtime_failure_while_running_is_reported(worker, model_file) -> None:
    path = model_file("bad_gather.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) + 1

        def build():
            return Model(), (torch.rand(2, 3),)

        # Exports, but the Gather index is out of range when ONNX Runtime runs it.
        torch.onnx.register_custom_op_symbolic(
            "aten::relu", lambda g, x: g.op("Gather", x, g.op("Constant", value_t=torch.tensor([7]))), 9)
    """)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), options={"opset": 12}))
    (problem,) = result.unsupported
    assert problem.reason == "runtime_error"
    assert problem.kind == "aten::relu"
