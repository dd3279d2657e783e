"""OpenVINO as a second runtime: real exports compiled and run by OpenVINO's CPU plugin, against torch."""
from __future__ import annotations

import io
import json
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fixport.core.foundation.errors import FixportError
from fixport.core.project.tolerances import BF16_COMPUTE_TABLE_NAME, DEFAULT_TABLE_NAME
from fixport.core.records.requests import CompareRequest
from fixport.core.records.results import ModelRequest
from tests.conftest import REPO

ov = pytest.importorskip("openvino")

# A 2-layer transformer encoder, as the issue measured a 6-layer one: ~1e-6 from torch with the f32
# hint, ~1e-2 in OpenVINO's bf16 default.
ENCODER_MODEL = """
    import torch
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 17}


    def build():
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), (torch.randn(2, 16, 64),)
"""

# torch.linalg.det exports to ONNX Det, which ONNX Runtime runs and OpenVINO 2026.4 has no conversion for.
DET_MODEL = """
    import torch
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 17}


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 16)

        def forward(self, x):
            return torch.linalg.det(self.proj(x).reshape(-1, 4, 4))


    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(3, 4),)
"""


def _compare(worker, path, **arguments):
    return worker.run(CompareRequest(ModelRequest(path=str(path)), **arguments))


def _one_node_model(op: str, opset: int = 18) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 3))
    node = helper.make_node(op, ["x"], ["y"], name=f"/block/{op}")
    graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _openvino_error(model: bytes) -> str:
    core = ov.Core()
    with pytest.raises(Exception) as raised:  # OpenVINO's own exception type
        core.compile_model(core.read_model(io.BytesIO(model)), "CPU")
    return str(raised.value)


def test_openvino_errors_name_the_op_or_the_node() -> None:
    from fixport.core.onnx_io.openvino_errors import openvino_error_site, openvino_error_summary

    no_rule = _openvino_error(_one_node_model("Det"))
    assert openvino_error_site(no_rule).op_type == "Det" and not openvino_error_site(no_rule).node_name
    assert openvino_error_summary(no_rule) == "No conversion rule found for operations: Det-18"
    # MeanVarianceNormalization's default axes (0, 2, 3) do not fit a 2-d input: the node's conversion fails
    failed = _openvino_error(_one_node_model("MeanVarianceNormalization"))
    site = openvino_error_site(failed)
    assert (site.node_name, site.op_type) == ("/block/MeanVarianceNormalization", "MeanVarianceNormalization")
    assert openvino_error_summary(failed) == ("MeanVarianceNormalization node '/block/MeanVarianceNormalization': "
                                              "Parameter axis 2 out of tensor range [-2, 1]")


def test_strict_sets_the_f32_hint_and_deployed_keeps_openvinos_default() -> None:
    from fixport.core.onnx_io.ort_session import create_session

    model = onnx.load_from_string(_one_node_model("Relu"))
    strict = create_session(model, "openvino", precision="strict")
    assert strict.providers_used == ["OpenVINO (CPU)"]
    assert strict.provider_options == {"INFERENCE_PRECISION_HINT": "f32", "inference precision": "float32"}
    values = np.array([[-1, 2, -3], [4, -5, 6], [0, 1, -1]], dtype=np.float32)
    (out,) = strict.session.run(None, {"x": values})
    np.testing.assert_array_equal(out, np.maximum(values, 0))
    deployed = create_session(model, "openvino", precision="deployed")
    default = str(ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT"))
    assert "INFERENCE_PRECISION_HINT" not in deployed.provider_options
    assert deployed.provider_options["inference precision"] in default


def test_encoder_matches_torch_in_f32_and_node_by_node(worker, model_file) -> None:
    result = _compare(worker, model_file("encoder.py", ENCODER_MODEL), runs=2, provider="openvino")
    assert result.passed, result.to_json()
    assert result.providers_used == ["OpenVINO (CPU)"] and result.tolerance_name == DEFAULT_TABLE_NAME
    assert max(output.max_abs for output in result.outputs) < 1e-5
    assert result.node_analysis is not None and len(result.node_analysis.nodes) > 20
    assert result.node_analysis.first_divergent is None
    assert "INFERENCE_PRECISION_HINT=f32" in result.precision_summary()
    assert result.cost is not None and result.cost.latency_ms is not None


@pytest.mark.slow
def test_openvinos_default_precision_is_a_precision_mode_not_a_failure(worker, model_file) -> None:
    result = _compare(worker, model_file("encoder.py", ENCODER_MODEL), runs=2, provider="openvino",
                      precision="deployed", analyze_nodes=False)
    assert result.passed, result.to_json()
    if result.provider_options["inference precision"] == "bfloat16":  # a CPU with bfloat16 instructions
        assert result.tolerance_name == BF16_COMPUTE_TABLE_NAME and "bfloat16" in result.tolerance_reason
        worst = max(output.max_abs for output in result.outputs)
        assert 1e-4 < worst < 5e-2, worst  # bf16's error, far past float32's table, within bfloat16's
    else:
        assert result.tolerance_name == DEFAULT_TABLE_NAME
        assert any("no bfloat16 instructions" in message for message in result.messages)


def test_an_op_openvino_refuses_is_named_on_its_node_and_source_line(worker, model_file) -> None:
    with pytest.raises(FixportError, match="does not load in OpenVINO") as raised:
        _compare(worker, model_file("det.py", DET_MODEL), runs=1, provider="openvino")
    assert "No conversion rule found for operations: Det-17" in raised.value.message
    assert "(aten::linalg_det at det.py:14)" in raised.value.message
    assert ".cpp" not in raised.value.message
    # ONNX Runtime runs the same export
    assert _compare(worker, model_file("det.py", DET_MODEL), runs=1, analyze_nodes=False).passed


def test_cli_check_and_compare_take_runtime_openvino(cli, model_file) -> None:
    det = str(model_file("det.py", DET_MODEL))
    checked = cli("check", det, "--runtime", "openvino", "--json")
    assert checked.returncode == 1, checked.stderr
    problems = json.loads(checked.stdout)["unsupported"]
    assert [(p["kind"], p["reason"]) for p in problems] == [("aten::linalg_det", "runtime_error")]
    assert "Det-17" in problems[0]["message"] and problems[0]["onnx_node"]
    assert cli("check", det, "--json").returncode == 0  # clean in ONNX Runtime
    exported = str(Path(det).with_suffix(".onnx"))
    assert cli("export", det, "-o", exported).returncode == 0
    from_file = cli("check", exported, "--runtime", "openvino")  # an ONNX file: compiled in OpenVINO
    assert from_file.returncode == 1 and "onnx::Det  [runtime_error]" in from_file.stdout, from_file.stdout
    encoder = str(model_file("encoder.py", ENCODER_MODEL))
    clean = cli("check", encoder, "--runtime", "openvino")
    assert clean.returncode == 0 and "runs in OpenVINO (f32) and matches torch" in clean.stdout, clean.stdout
    compared = cli("compare", encoder, "--runtime", "openvino",
                   "--precision", "deployed", "--runs", "1", "--no-node-analysis", "--json")
    assert compared.returncode == 0, compared.stderr
    precision = json.loads(compared.stdout)["precision"]
    assert precision["mode"] == "deployed" and "OpenVINO" in precision["summary"]


def test_runtimes_shows_both_against_torch_and_where_they_first_differ(cli, model_file) -> None:
    """OpenVINO's bf16 default against ONNX Runtime at a float32-tight tolerance: they part at the
    first MatMul, named with its torch op; with the f32 hint they agree at every node."""
    encoder = str(model_file("encoder.py", ENCODER_MODEL))
    tight = cli("compare", encoder, "--runtimes", "ort,openvino", "--precision", "deployed", "--runs", "1",
                "--no-node-analysis", "--rtol", "0", "--atol", "1e-5", "--json")
    assert tight.returncode == 1, tight.stderr
    payload = json.loads(tight.stdout)
    assert payload["results"]["ort"]["pass"] and list(payload["results"]) == ["ort", "openvino"]
    first = payload["first_difference"]
    bf16 = "bfloat16" in payload["results"]["openvino"]["precision"]["summary"]
    if bf16:  # a CPU with bfloat16 instructions
        assert not payload["results"]["openvino"]["pass"]
        assert (first["onnx_kind"], first["torch_kind"]) == ("onnx::MatMul", "aten::linear"), first
        assert first["scope"] == "layers/0/self_attn" and first["max_abs"] > 1e-5
        assert payload["between"].startswith("ONNX Runtime and OpenVINO first differ at /layers.0/self_attn/")
    strict = cli("compare", encoder, "--runtimes", "ort,openvino", "--runs", "1", "--no-node-analysis")
    assert strict.returncode == 0, strict.stderr
    assert "=== OpenVINO against torch ===" in strict.stdout
    assert "ONNX Runtime and OpenVINO agree at every one of" in strict.stdout
    refused = cli("compare", str(model_file("det.py", DET_MODEL)), "--runtimes", "ort,openvino", "--runs", "1")
    assert refused.returncode == 1 and "ERROR: The export of det.py does not load in OpenVINO" in refused.stdout
    assert cli("compare", encoder, "--runtimes", "ort,tensorrt").returncode == 2


def test_without_openvino_the_option_says_what_to_install(cli, model_file, monkeypatch) -> None:
    real_version = metadata.version

    def without_openvino(name: str) -> str:
        if name == "openvino":
            raise metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(metadata, "version", without_openvino)
    model = str(model_file("encoder.py", ENCODER_MODEL))
    for command in (("compare", model), ("check", model), ("sweep", model)):
        completed = cli(*command, "--runtime", "openvino")
        assert completed.returncode == 2, (command, completed.stdout, completed.stderr)
        assert 'pip install -e ".[openvino]"' in completed.stderr and "Traceback" not in completed.stderr


def test_sweep_compares_in_openvino_and_keeps_its_rows_apart(worker, model_file, tmp_path) -> None:
    from fixport.core.sweep.cache import SweepCache
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.sweep.rows import SweepSettings

    det = model_file("det.py", DET_MODEL)
    row = sweep_model(worker, det, "torchscript", SweepSettings(runtime="openvino"))
    assert row.verdict == "error" and "Det-17" in row.message and "det.py:14" in row.message
    assert sweep_model(worker, det, "torchscript", SweepSettings()).verdict == "pass"
    cache = SweepCache(tmp_path / "cache")
    assert cache.key(det, "torchscript", SweepSettings(runtime="openvino")) != \
        cache.key(det, "torchscript", SweepSettings())


@pytest.mark.slow
def test_provider_box_offers_openvino_and_compare_runs_there(qtbot, window, model_file) -> None:
    from PySide6.QtCore import Qt

    provider = window.actions.provider
    assert [provider.itemText(i) for i in range(provider.count())] == ["CPU", "CUDA", "OpenVINO"]
    assert provider.model().item(2).isEnabled()
    assert "INFERENCE_PRECISION_HINT=f32" in provider.itemData(2, Qt.ItemDataRole.ToolTipRole)
    with qtbot.waitSignals([window.runner.busy_changed], timeout=120_000, check_params_cbs=[lambda busy: not busy]):
        window.open_path(model_file("encoder.py", ENCODER_MODEL))
    provider.setCurrentText("OpenVINO")
    with qtbot.waitSignals([window.runner.busy_changed], timeout=120_000, check_params_cbs=[lambda busy: not busy]):
        window.actions["compare"].trigger()
    result = window.compare.result
    assert result is not None and result.passed and result.providers_used == ["OpenVINO (CPU)"]
    assert "OpenVINO on OpenVINO (CPU)" in window.compare.summary.text()
    assert "INFERENCE_PRECISION_HINT=f32" in window.compare.settings_label.text()


@pytest.mark.slow
def test_a_node_openvinos_cpu_plugin_cannot_compile_is_named_in_the_sweep_row(worker) -> None:
    """kornia's FFT convolution, fixed by fix --auto, converts, but OpenVINO's CPU plugin refuses its
    RDFT ("Node /DFT_2 of type RDFT", then the reason): the row names the node, the reason and the line."""
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.sweep.rows import SweepSettings

    row = sweep_model(worker, REPO / "examples" / "corpus" / "fft_conv_kornia.py", "torchscript",
                      SweepSettings(fix=True, runtime="openvino"))
    assert row.status == "fixed" and row.verdict == "error", row
    assert "does not load in OpenVINO" in row.message and "RDFT node '/DFT_2': Signal size greater" in row.message
    assert "aten::fft_irfftn" in row.message or "aten::fft_rfftn" in row.message, row.message


def test_an_export_with_its_weights_on_disk_runs_in_openvino_and_leaves_no_file(small_threshold, model_file) -> None:
    """A big export keeps its weights in a folder: OpenVINO reads them through a graph file written
    there for the moment, which is gone once the model is compiled."""
    import torch

    from fixport.core.exporters.choice import exporter_for
    from fixport.core.loaders.loading import load_model
    from fixport.core.onnx_io.ort_session import create_session
    from fixport.core.project.export_options import ExportOptions

    source = """
        import torch

        def build():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval(), \\
                (torch.randn(2, 64),)
    """
    loaded = load_model(model_file("wide.py", source), trust=True)
    model = exporter_for("torchscript").export(loaded, ExportOptions(opset=17)).model
    assert model.weights_on_disk
    before = sorted(model.base_dir.iterdir())
    session = create_session(model, "openvino").session
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    assert sorted(model.base_dir.iterdir()) == before
