"""CUDA for real: precision modes, node placement, the runtime check, and the Compare dock's plots.

Everything that needs no GPU runs here on real ONNX Runtime sessions, real exports in the worker
and real Qt widgets; the tests at the bottom need an NVIDIA GPU with onnxruntime-gpu and are
skipped (with that reason) elsewhere.
"""
from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from fixport.core.foundation.comparison import DEFAULT_TOLERANCES
from fixport.core.onnx_io.cuda_precision import STRICT_CUDA_OPTIONS, cuda_provider_options
from fixport.core.onnx_io.ort_session import create_session, providers_for
from fixport.core.onnx_io.placement import PROFILE_PREFIX, collect_placement, placement_from_events
from fixport.core.onnx_io.runtime_check import (
    cuda_fallback_message,
    installed_runtimes,
    runtime_problem,
)
from fixport.core.project.tolerances import TF32_TABLE_NAME, ToleranceTable
from fixport.core.records.compare_result import CompareResult, NodeAnalysis, NodeError, NodePlacement
from fixport.core.records.requests import AutoFixRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.statistics.output_stats import compare_arrays
from fixport.examples.catalog import example_path, list_examples
from tests.conftest import run_main

CUDA_PROVIDER = "CUDAExecutionProvider"
ORT_HAS_CUDA = CUDA_PROVIDER in ort.get_available_providers()
_skip_without_gpu = pytest.mark.skipif(not ORT_HAS_CUDA, reason="needs an NVIDIA GPU and onnxruntime-gpu")


def needs_gpu(test):
    """The gpu tier, skipped (with the reason) where ONNX Runtime has no CUDA."""
    return pytest.mark.gpu(_skip_without_gpu(test))


cpu_only = pytest.mark.skipif(ORT_HAS_CUDA, reason="this machine has CUDA: nothing falls back")
SMALL_EXAMPLE = "int16_square_dynamo"  # a few nodes; TorchScript's export passes in seconds


def small_model() -> onnx.ModelProto:
    """MatMul -> Relu -> Add, named as an exporter names its nodes."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [3, 4], np.linspace(-1, 1, 12, dtype=np.float32))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul"),
             helper.make_node("Relu", ["y"], ["r"], name="/act/Relu"),
             helper.make_node("Add", ["r", "r"], ["z"], name="/Add")]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])], initializer=[weight])
    # IR 10 as torch writes it: onnx's newest IR version can be ahead of what ONNX Runtime reads.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


# ---- precision modes: option plumbing ----

def test_strict_mode_turns_off_every_precision_trade_and_deployed_keeps_the_defaults() -> None:
    assert providers_for("cuda", "strict") == [(CUDA_PROVIDER, {"use_tf32": "0",
                                                                "enable_skip_layer_norm_strict_mode": "1"}),
                                               "CPUExecutionProvider"]
    assert providers_for("cuda", "deployed") == [(CUDA_PROVIDER, {}), "CPUExecutionProvider"]
    assert providers_for("cpu", "strict") == ["CPUExecutionProvider"]
    with pytest.raises(ValueError, match="strict, deployed"):
        cuda_provider_options("fast")


def test_tf32_tolerance_row_is_float16s_and_says_why() -> None:
    table = ToleranceTable().for_tf32()
    assert table.for_dtype("float32") == DEFAULT_TOLERANCES["float16"] == (1e-2, 1e-3)
    assert table.for_dtype("float64") == DEFAULT_TOLERANCES["float64"]  # TF32 is for float32 only
    assert table.for_dtype("int64") == (0.0, 0.0)
    assert table.name == TF32_TABLE_NAME and "10-bit mantissa" in table.reason
    assert ToleranceTable(rtol=1e-4).for_tf32().for_dtype("float32") == (1e-4, 1e-3)  # the user's override wins


def test_tf32_absolute_tolerance_follows_the_size_of_the_output() -> None:
    """TF32's error follows the size of the sums (measured on an H100: ResNet-50's logits up to 112 were
    off by 3.8e-2, near-zero logits included): such an output passes the TF32 rows, a real error does not."""
    from fixport.core.statistics.output_stats import compare_output_lists

    table = ToleranceTable().for_tf32()
    rtol, atol = table.for_values("float32", 112.0)
    assert rtol == 1e-2 and atol == pytest.approx(4e-3 * 112.0)
    assert table.for_values("float32", 0.01) == (1e-2, 1e-3)  # never below the row
    assert ToleranceTable(atol=1e-4).for_tf32().for_values("float32", 112.0) == (1e-2, 1e-4)  # the user's atol wins
    assert ToleranceTable().for_values("float32", 112.0) == DEFAULT_TOLERANCES["float32"]  # strict: no scaling
    logits = np.linspace(-112, 112, 1001, dtype=np.float32)  # 0 and near-zero values among them
    tf32_like = logits + np.float32(3.8e-2) * np.cos(np.arange(1001, dtype=np.float32))
    assert all(s.passed for s in compare_output_lists([("logits", logits)], [tf32_like], table))
    assert not any(s.passed for s in compare_output_lists([("logits", logits)], [tf32_like], ToleranceTable()))
    wrong = logits.copy()
    wrong[500] += 1.0  # a real error, 1 % of the largest logit
    assert not any(s.passed for s in compare_output_lists([("logits", logits)], [wrong], table))


@cpu_only
def test_cuda_asked_of_a_cpu_build_runs_on_cpu_and_says_what_to_install() -> None:
    info = create_session(small_model(), "cuda", precision="strict")
    assert info.providers_used == ["CPUExecutionProvider"] and info.provider_options == {}
    assert any("CUDA is not available" in m and 'pip install -e ".[cuda]"' in m and "CPU instead" in m
               for m in info.messages), info.messages


def test_silent_fallback_is_caught_from_the_sessions_own_provider_list() -> None:
    asked = providers_for("cuda", "strict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU build warns that CUDA is not in its list
        session = ort.InferenceSession(small_model().SerializeToString(), providers=asked)
    used = session.get_providers()
    message = cuda_fallback_message([CUDA_PROVIDER, "CPUExecutionProvider"], used)
    if CUDA_PROVIDER in used:
        assert message is None
    else:
        assert message is not None and "could not load its libraries" in message and "cuDNN" in message
    assert cuda_fallback_message(["CPUExecutionProvider"], ["CPUExecutionProvider"]) is None


# ---- the runtime check ----

def test_runtime_messages_for_none_both_and_one() -> None:
    none = runtime_problem({})
    assert none is not None and "not installed" in none and '".[cpu]"' in none and '".[cuda]"' in none
    both = runtime_problem({"onnxruntime": "1.31.1", "onnxruntime-gpu": "1.31.1"})
    assert both is not None and "onnxruntime 1.31.1 and onnxruntime-gpu 1.31.1" in both
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in both
    assert runtime_problem({"onnxruntime-gpu": "1.31.1"}) is None
    assert len(installed_runtimes()) == 1 and runtime_problem() is None  # this machine is set up right


# ---- placement from ORT's own profile ----

def test_placement_is_read_from_a_real_cpu_session_profile() -> None:
    info = create_session(small_model(), "cpu", profile=True)
    info.session.run(None, {"x": np.ones((2, 3), np.float32)})
    profile_files = set(Path(tempfile.gettempdir()).glob(f"{PROFILE_PREFIX}*"))
    placement = collect_placement(info.session)
    assert placement is not None
    assert placement.nodes_by_provider == {"CPUExecutionProvider": ["/fc/MatMul", "/act/Relu", "/Add"]}
    assert placement.op_types == {"/fc/MatMul": "MatMul", "/act/Relu": "Relu", "/Add": "Add"}
    assert placement.cpu_nodes_while_cuda_asked("cuda") == []  # nothing was on CUDA: no flag
    assert placement.summary("cpu") == "Node placement: 3 on CPUExecutionProvider."
    info.session.run(None, {"x": np.ones((2, 3), np.float32)})
    assert collect_placement(info.session) is None  # the profile ended after the first run
    assert not set(Path(tempfile.gettempdir()).glob(f"{PROFILE_PREFIX}*")) - profile_files


def test_nodes_left_on_cpu_while_cuda_was_asked_are_flagged_but_copies_are_not() -> None:
    events = [{"cat": "Session", "name": "model_run", "args": {}}]
    for name, op, provider in (("/conv/Conv", "Conv", CUDA_PROVIDER),
                               ("Memcpy", "MemcpyToHost", "CPUExecutionProvider"),
                               ("/NonMaxSuppression", "NonMaxSuppression", "CPUExecutionProvider"),
                               ("/conv/Conv", "Conv", CUDA_PROVIDER)):
        events.append({"cat": "Node", "name": f"{name}_kernel_time", "args": {"op_name": op, "provider": provider}})
        events.append({"cat": "Node", "name": f"{name}_fence_before", "args": {"op_name": op}})
    placement = placement_from_events(events)
    assert placement.counts() == {CUDA_PROVIDER: 1, "CPUExecutionProvider": 2}
    assert placement.cpu_nodes_while_cuda_asked("cuda") == ["/NonMaxSuppression"]
    assert "1 node(s) ran on CPU although CUDA was asked" in placement.summary("cuda")
    assert placement.to_json("cuda")["cpu_fallback"] is True
    assert placement.to_json("cpu")["cpu_fallback"] is False


# ---- the compare job, the CLI and the JSON ----

def test_compare_says_which_mode_options_device_and_placement(worker, capsys) -> None:
    from fixport.cli.compare import print_comparison

    result = worker.run(CompareRequest(ModelRequest(path=str(example_path(SMALL_EXAMPLE)))))
    assert result.passed and result.precision == "strict" and result.torch_device == "cpu"
    assert result.tolerance_name == "default"
    assert result.placement is not None
    on_cpu = result.placement.nodes_by_provider["CPUExecutionProvider"]
    assert list(result.placement.nodes_by_provider) == ["CPUExecutionProvider"] and len(on_cpu) >= 2
    assert result.node_analysis is not None and result.node_analysis.nodes  # per-node analysis still runs
    print_comparison(result)
    printed = capsys.readouterr().out
    assert "Precision strict" in printed and f"Node placement: {len(on_cpu)} on CPUExecutionProvider" in printed


def test_unknown_precision_is_a_clear_error(worker) -> None:
    from fixport.core.foundation.errors import FixportError

    with pytest.raises(FixportError, match="precision"):
        worker.run(CompareRequest(ModelRequest(path=str(example_path(SMALL_EXAMPLE))), precision="fast"))


@cpu_only
def test_cli_precision_and_torch_device_flags_in_the_json() -> None:
    completed = run_main("compare", str(example_path(SMALL_EXAMPLE)), "--provider", "cuda", "--precision",
                         "deployed", "--torch-device", "cuda", "--no-node-analysis", "--json")
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    precision = payload["precision"]
    assert precision["mode"] == "deployed" and precision["provider_options"] == {}
    assert precision["tolerance_table"] == "default"  # no CUDA here, so no TF32 to allow for
    assert payload["placement"]["counts"] == {"CPUExecutionProvider": len(payload["placement"]["nodes"]
                                                                           ["CPUExecutionProvider"])}
    assert payload["placement"]["cpu_fallback"] is False
    messages = " ".join(payload["messages"])
    assert "changes nothing on CPU" in messages
    import torch

    if not torch.cuda.is_available():
        assert precision["torch_device"] == "cpu" and "torch.cuda.is_available() is False" in messages
    rejected = run_main("compare", str(example_path(SMALL_EXAMPLE)), "--precision", "fast")
    assert rejected.returncode == 2 and "--precision" in rejected.stderr


# ---- the Compare dock ----

def _one_node_result(error: float, placement: NodePlacement, precision: str = "strict") -> CompareResult:
    value = np.array([1.0], np.float32)
    output = compare_arrays("out", value, value + np.float32(error), 1e-3, 1e-5, 0)
    node = NodeError("/Relu", "onnx::Relu", "y", "key", "aten::relu", "", "", "", (1,), "float32",
                     error, error, error, 1e-3, 1e-5, error > 1e-5)
    table = ToleranceTable().for_tf32() if precision == "deployed" else ToleranceTable()
    return CompareResult("m.py", "export (opset 17)", "cuda", [CUDA_PROVIDER, "CPUExecutionProvider"], 1, [output],
                         node_analysis=NodeAnalysis(0, [node]), precision=precision,
                         provider_options=cuda_provider_options(precision), tolerance_name=table.name,
                         tolerance_reason=table.reason, placement=placement)


def test_dock_shows_mode_and_flags_nodes_on_cpu(qtbot) -> None:
    from fixport.gui.compare_dock import CompareDock
    from fixport.gui.graph_style import WARN_COLOUR

    dock = CompareDock()
    qtbot.addWidget(dock)
    placement = NodePlacement({CUDA_PROVIDER: ["/Relu"], "CPUExecutionProvider": ["/Shape"]},
                              {"/Relu": "Relu", "/Shape": "Shape"})
    dock.show_result(_one_node_result(0.0, placement))
    assert "Precision strict" in dock.settings_label.text()
    assert ", ".join(f"{k}={v}" for k, v in STRICT_CUDA_OPTIONS.items()) in dock.settings_label.text()
    assert "1 on CUDAExecutionProvider, 1 on CPUExecutionProvider" in dock.placement_label.text()
    assert "/Shape (Shape)" in dock.placement_label.text() and WARN_COLOUR in dock.placement_label.text()
    assert "CPUExecutionProvider: /Shape" in dock.placement_label.toolTip()
    dock.show_result(_one_node_result(1e-4, NodePlacement({CUDA_PROVIDER: ["/Relu"]}, {"/Relu": "Relu"}),
                                      "deployed"))
    assert "Precision deployed" in dock.settings_label.text() and "TF32" in dock.settings_label.text()
    assert WARN_COLOUR not in dock.placement_label.text()
    dock.clear()
    assert dock.settings_label.isHidden() and dock.placement_label.isHidden()


@pytest.mark.parametrize("error", [0.0, 2e-3])
def test_plots_stay_readable_for_zero_errors_and_one_node(qtbot, error) -> None:
    from fixport.gui.compare_dock import CompareDock

    dock = CompareDock()
    qtbot.addWidget(dock)
    dock.show_result(_one_node_result(error, NodePlacement()))
    plots = dock.plots
    for plot in (plots.per_output, plots.per_node):
        (x_low, x_high), (y_low, y_high) = plot.getPlotItem().getViewBox().viewRange()
        assert -1 <= x_low < 0 < x_high <= 1, (x_low, x_high)  # one point, centred, not -500..500
        assert -9 < y_low < y_high < 2 and y_high - y_low <= 6, (y_low, y_high)  # near the data, not at -30
    (x_low, x_high), (y_low, y_high) = plots.scatter.getPlotItem().getViewBox().viewRange()
    assert 0.5 < x_low < 1 < x_high < 1.5 and y_low < 1 + error < y_high
    assert all(count >= 1 for count in dock.plotted_item_counts().values())


def test_window_has_a_precision_control_next_to_the_provider(qtbot, worker, tmp_path, monkeypatch) -> None:
    from PySide6.QtCore import QSettings, Qt

    from fixport.gui.job_runner import JobRunner
    from fixport.gui.main_window import MainWindow

    monkeypatch.setenv("FIXPORT_DATA_DIR", str(tmp_path / "data"))
    window = MainWindow(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
                        runner=JobRunner(worker=worker))
    qtbot.addWidget(window)
    actions = window.actions
    assert [actions.precision.itemText(i) for i in range(actions.precision.count())] == ["strict", "deployed"]
    assert actions.precision.currentText() == "strict"
    assert "use_tf32=0" in actions.precision.itemData(0, Qt.ItemDataRole.ToolTipRole)
    toolbar = actions.provider.parentWidget()
    assert actions.precision.parentWidget() is toolbar


# ---- on a GPU (skipped without one) ----

def _examples_passing_on_cpu(worker) -> list[tuple[str, dict, list]]:
    """(example, export options, fixes) for every example that, fixed by `fix --auto`, passes on CPU."""
    passing = []
    for example in list_examples():
        model = ModelRequest(path=str(example.path))
        fixed = worker.run(AutoFixRequest(model))
        options = {"opset": fixed.opset_raised[1]} if fixed.opset_raised else {}
        if fixed.after.unsupported:
            continue
        result = worker.run(CompareRequest(model, dict(options), list(fixed.mappings), analyze_nodes=False))
        if result.passed:
            passing.append((example.name, options, list(fixed.mappings)))
    return passing


@needs_gpu
def test_gpu_session_carries_the_strict_options() -> None:
    info = create_session(small_model(), "cuda", precision="strict", profile=True)
    assert info.providers_used[0] == CUDA_PROVIDER, info.messages
    reported = info.session.get_provider_options()[CUDA_PROVIDER]
    assert {name: reported[name] for name in STRICT_CUDA_OPTIONS} == STRICT_CUDA_OPTIONS
    assert info.provider_options == STRICT_CUDA_OPTIONS
    info.session.run(None, {"x": np.ones((2, 3), np.float32)})
    placement = collect_placement(info.session)
    assert placement is not None and "/fc/MatMul" in placement.nodes_by_provider[CUDA_PROVIDER]


@needs_gpu
def test_gpu_strict_compare_passes_every_example_that_passes_on_cpu(worker) -> None:
    passing = _examples_passing_on_cpu(worker)
    assert passing
    failures = {}
    for name, options, mappings in passing:
        result = worker.run(CompareRequest(ModelRequest(path=str(example_path(name))), options, mappings,
                                           provider="cuda", precision="strict"))
        assert result.providers_used[0] == CUDA_PROVIDER, result.messages
        assert result.provider_options == STRICT_CUDA_OPTIONS
        assert result.placement is not None and result.placement.counts().get(CUDA_PROVIDER, 0) > 0
        if not result.passed or result.node_analysis is None:
            failures[name] = result.to_json()
    assert not failures, json.dumps(failures, indent=1)[:4000]


@needs_gpu
def test_gpu_deployed_mode_names_the_tf32_tolerance_and_why(worker) -> None:
    result = worker.run(CompareRequest(ModelRequest(path=str(example_path("resnet18_clean"))), provider="cuda",
                                       precision="deployed"))
    assert result.provider_options == {} and result.tolerance_name == TF32_TABLE_NAME
    assert "10-bit mantissa" in result.tolerance_reason and "TF32" in result.precision_summary()
    assert result.tolerances["float32"] == (1e-2, 1e-3)
    assert result.passed, result.to_json()


@needs_gpu
def test_gpu_torch_reference_and_per_node_analysis(worker) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and a CUDA build of torch")
    result = worker.run(CompareRequest(ModelRequest(path=str(example_path("resnet18_clean"))), provider="cuda",
                                       torch_device="cuda"))
    assert result.torch_device == "cuda" and result.passed, result.to_json()
    assert result.node_analysis is not None and result.node_analysis.nodes
    assert any("re-ran on CPU" in m for m in result.messages)


BFLOAT16_MODEL = """
    import torch
    from torch import nn

    def build():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 16))
        return model.to(torch.bfloat16).eval(), (torch.randn(4, 32, dtype=torch.bfloat16),)
"""


@needs_gpu
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_gpu_runs_the_bfloat16_graph_itself(worker, model_file, exporter) -> None:
    """On CUDA the bfloat16 kernels run (only the graph's edges are float32), not the CPU's widened copy."""
    from fixport.core.onnx_io.bfloat16_runs import WIDENED_ON_CPU_NOTE

    path = model_file("bfloat16_mlp.py", BFLOAT16_MODEL)
    result = worker.run(CompareRequest(ModelRequest(str(path)), {"exporter": exporter}, provider="cuda"))
    assert result.providers_used[0] == CUDA_PROVIDER, result.messages
    assert WIDENED_ON_CPU_NOTE not in result.messages
    assert result.outputs[0].dtype == "bfloat16" and result.passed, result.to_json()
    assert result.placement is not None and result.placement.counts().get(CUDA_PROVIDER, 0) > 0
    assert result.node_analysis is not None and result.node_analysis.nodes, result.messages


@needs_gpu
def test_gpu_session_reads_the_weights_torch_maps_from_the_export(small_threshold, model_file) -> None:
    """A big export's weights reach ONNX Runtime from torch's mapping of the file (add_initializer):
    the CUDA session copies them to the GPU and the comparison, node by node too, still holds."""
    from fixport.core.comparison.compare_job import compare
    from tests.test_mapped_weights import MODEL

    path = model_file("mapped.py", MODEL)
    for exporter in ("dynamo", "torchscript"):
        result = compare(CompareRequest(ModelRequest(str(path), trust=True), {"exporter": exporter},
                                        provider="cuda"))
        assert result.providers_used[0] == CUDA_PROVIDER, result.messages
        assert result.passed, result.to_json()
        assert result.node_analysis is not None and result.node_analysis.nodes, result.messages


@needs_gpu
def test_gpu_torch_reference_agrees_with_the_cpu_reference(worker) -> None:
    """The torch reference on the GPU (TF32 off) and on the CPU give the same verdict and errors of one size."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and a CUDA build of torch")
    model = ModelRequest(path=str(example_path("resnet18_clean")))
    on_cpu = worker.run(CompareRequest(model, provider="cuda", analyze_nodes=False))
    on_gpu = worker.run(CompareRequest(model, provider="cuda", torch_device="cuda", analyze_nodes=False))
    assert on_cpu.passed and on_gpu.passed and on_gpu.torch_device == "cuda"
    assert on_gpu.outputs[0].max_abs < 10 * max(on_cpu.outputs[0].max_abs, 1e-6)


@needs_gpu
def test_gpu_a_model_whose_forward_cannot_run_on_cuda_gets_the_cpu_reference(worker) -> None:
    """autograd_numpy's forward calls .numpy(): on CUDA it raises, so the reference comes from CPU, said."""
    result = worker.run(CompareRequest(ModelRequest(str(example_path("autograd_numpy"))), provider="cuda",
                                       torch_device="cuda"))
    assert result.passed and result.torch_device == "cpu", result.to_json()
    assert any("fails on cuda" in m and "ran on CPU instead" in m for m in result.messages), result.messages
