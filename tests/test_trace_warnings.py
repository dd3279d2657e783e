"""TracerWarnings tied to the traced node that took the value they recorded as a constant: in
check's report and in the Inspector, not as loose lines."""
from __future__ import annotations

from fixport.core.exporters.trace_warnings import baked_here, warnings_by_node
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path


def test_each_warning_names_the_node_that_took_its_constant(worker) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("baked_sizes")))))
    graph = result.source_graph
    linked = {graph.node_by_id[node_id].source: [w.line for w in found]
              for node_id, found in warnings_by_node(result.warnings, graph).items()}
    assert linked["baked_sizes.py:35"] == ["baked_sizes.py:34"]  # int(x.shape[1]) // 2, sliced on the next line
    assert linked["baked_sizes.py:38"] == ["baked_sizes.py:37", "baked_sizes.py:37"]  # .tolist(), used below
    sliced = next(n for n in graph.nodes if n.source == "baked_sizes.py:35" and 4 in
                  baked_here(result.warnings, graph, n).constants)  # the half of the traced 8, kept as 4
    (warning,) = baked_here(result.warnings, graph, sliced).warnings
    assert warning.what.startswith("Converting a tensor to a Python integer")


def test_check_prints_where_each_warning_went(cli) -> None:
    shown = cli("check", str(example_path("baked_sizes"))).stdout
    assert "recorded as a constant into: aten::slice at baked_sizes.py:35" in shown, shown


def test_the_inspector_shows_the_warning_on_the_node(qtbot, window) -> None:
    from tests.test_gui_flow import open_example

    open_example(qtbot, window, "baked_sizes")
    graph = window.workbench.analysis.source_graph
    node = next(n for n in graph.nodes if n.source == "baked_sizes.py:38")
    window.select_node("source", node.id)
    shown = window.inspector.browser.toPlainText()
    assert "Traced as a constant" in shown and "TracerWarning at baked_sizes.py:37" in shown, shown
    assert "16" in shown  # rows * columns as traced (2 * 8)
