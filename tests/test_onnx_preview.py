"""Draw first, analyse after: an .onnx file's graph is read in the window process and the
worker's analysis decorates the same drawing."""
from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from fixport.gui.main_window import MainWindow
from fixport.gui.onnx_preview import read_onnx_graph

JOB_TIMEOUT_MS = 240_000


def _model_with_unknown_op(path: Path) -> Path:
    """Relu -> an op ONNX Runtime has no kernel for -> Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Frobnicate", ["a"], ["b"], name="odd", domain="my.domain"),
             helper.make_node("Relu", ["b"], ["y"], name="last")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)])
    onnx.save(model, str(path))
    return path


def test_the_preview_reads_the_graph_the_worker_analyses(worker, tmp_path: Path) -> None:
    """Same node ids on both sides: the window can keep its drawing when the analysis arrives."""
    from fixport.core.records.requests import AnalyzeRequest
    from fixport.core.records.results import ModelRequest

    path = _model_with_unknown_op(tmp_path / "odd.onnx")
    preview = read_onnx_graph(path)
    analysed = worker.run(AnalyzeRequest(model=ModelRequest(path=str(path)))).onnx_graph
    assert [n.id for n in preview.nodes] == [n.id for n in analysed.nodes] == ["first", "odd", "last"]


def test_an_onnx_file_is_drawn_and_then_decorated(qtbot, window: MainWindow, tmp_path: Path) -> None:
    path = _model_with_unknown_op(tmp_path / "odd.onnx")
    with qtbot.waitSignal(window.onnx_preview.ready, timeout=JOB_TIMEOUT_MS):
        window.open_path(path)
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=JOB_TIMEOUT_MS)
    pane = window.graphs.pane("onnx")
    qtbot.waitUntil(lambda: pane.layout is not None, timeout=JOB_TIMEOUT_MS)
    assert {"first", "odd", "last"} <= set(pane.graph.node_by_id)
    assert [p.onnx_node or p.instance for p in window.workbench.analysis.unsupported] == ["odd"]
    assert "1 unsupported" in window.graphs.right.header.text()


def test_a_model_files_traced_graph_is_drawn_before_its_export_ends(qtbot, window: MainWindow) -> None:
    """The worker hands the traced graph on first; the final analysis reuses that drawing."""
    from fixport.examples.catalog import example_path

    seen_when_traced: list[tuple[object, object]] = []  # (analysis, drawn graph) when the partial arrived
    window.runner.partial.connect(lambda _job, piece: seen_when_traced.append(
        (window.workbench.analysis, window.graphs.graphs["source"])))
    with qtbot.waitSignal(window.runner.partial, timeout=JOB_TIMEOUT_MS) as partial:
        window.open_path(example_path("threshold"))
    traced = partial.args[1].graph
    assert seen_when_traced == [(None, traced)]  # drawn while the export still ran
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=JOB_TIMEOUT_MS)
    assert window.graphs.graphs["source"] is traced  # the same drawing, no second layout
    assert [n.id for n in traced.nodes] == [n.id for n in window.workbench.analysis.source_graph.nodes]


def test_a_clean_exports_onnx_graph_is_drawn_before_ort_checks_it(qtbot, window: MainWindow) -> None:
    """A clean export's ONNX graph is on screen while ONNX Runtime runs it and torch is compared;
    the analysis then keeps that drawing."""
    from fixport.core.records.results import ExportedGraph
    from fixport.examples.catalog import example_path

    seen: list[tuple[object, object]] = []  # (analysis, drawn ONNX graph) when the ONNX graph arrived
    window.runner.partial.connect(lambda _job, piece: seen.append(
        (window.workbench.analysis, window.graphs.graphs["onnx"])) if isinstance(piece, ExportedGraph) else None)
    with qtbot.waitSignal(window.runner.partial, timeout=JOB_TIMEOUT_MS,
                          check_params_cb=lambda _job, piece: isinstance(piece, ExportedGraph)) as partial:
        window.open_path(example_path("resnet18_clean"))
    exported = partial.args[1].graph
    assert seen == [(None, exported)]  # drawn before the analysis came back
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=JOB_TIMEOUT_MS)
    assert window.workbench.analysis.unsupported == []
    assert window.graphs.graphs["onnx"] is exported  # the same drawing, no second layout
    assert "checking" not in window.graphs.right.header.text()


def test_the_cuda_choice_follows_what_the_worker_reports(qtbot, window: MainWindow) -> None:
    """The window loads no onnxruntime: CUDA is offered once the warm worker lists its providers."""
    qtbot.waitUntil(lambda: "Checking" not in window.actions.provider.toolTip(), timeout=JOB_TIMEOUT_MS)
    cuda_item = window.actions.provider.model().item(1)
    import onnxruntime

    has_cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    assert cuda_item.isEnabled() == has_cuda
    if not has_cuda:
        assert "CUDA is not available" in window.actions.provider.toolTip()


def test_a_tall_graph_opens_at_its_inputs(qtbot, window: MainWindow, tmp_path: Path) -> None:
    """A graph too tall to fit readably opens showing where it starts, not where the last one was."""
    from PySide6.QtCore import QPointF

    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"relu_{i}") for i in range(300)]
    graph = helper.make_graph(nodes, "tall", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("v300", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "tall.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    pane = window.graphs.pane("onnx")
    window.open_path(_model_with_unknown_op(tmp_path / "odd.onnx"))  # another graph was on screen before
    qtbot.waitUntil(lambda: window.workbench.analysis is not None and pane.layout is not None, timeout=JOB_TIMEOUT_MS)
    window.open_path(path)
    qtbot.waitUntil(lambda: window.workbench.analysis is not None, timeout=JOB_TIMEOUT_MS)
    qtbot.waitUntil(lambda: pane.layout is not None and pane.layout.index_of("input:v0") is not None,
                    timeout=JOB_TIMEOUT_MS)
    index = pane.layout.index_of("input:v0")
    seen = pane.view.mapFromScene(QPointF(pane.layout.x[index], pane.layout.y[index]))
    port = pane.view.viewport().rect()
    assert port.contains(seen) and seen.y() < port.height() / 3  # at the top, where reading starts
