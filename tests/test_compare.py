"""`compare`: real models, real exports, real ONNX Runtime sessions, run in the export worker."""
from __future__ import annotations

import json
from pathlib import Path

import onnxruntime
import pytest

from fixport.core.records.compare_result import CompareResult
from fixport.core.records.requests import CompareRequest
from fixport.core.records.results import ModelRequest
from tests.conftest import REPO, run_main

# A model file that registers a wrong symbolic at import: the worker imports it, so the wrong
# mapping is in force for the worker's exports (and the registry is restored after the job).
WRONG_SIGMOID_MODEL = """
    import torch
    from torch import nn
    from torch.onnx import register_custom_op_symbolic

    FIXPORT_EXAMPLE = {"opset": 17}


    def wrong_sigmoid(g, x):
        return g.op("HardSigmoid", x)


    register_custom_op_symbolic("aten::sigmoid", wrong_sigmoid, 17)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            y = torch.sigmoid(self.bn(self.conv(x)) * 3.0)
            return self.head(y.mean(dim=(2, 3)))


    def build():
        torch.manual_seed(0)
        net = Net()
        with torch.no_grad():  # statistics far from identity: folding them changes the conv a lot
            net.bn.running_mean.uniform_(-1, 1)
            net.bn.running_var.uniform_(0.5, 2)
            net.bn.weight.uniform_(0.5, 2)
        return net.eval(), (torch.randn(1, 3, 8, 8),)
"""

CONV_BN_MODEL = WRONG_SIGMOID_MODEL.replace('register_custom_op_symbolic("aten::sigmoid", wrong_sigmoid, 17)', "")

CUSTOM_DOMAIN_MODEL = """
    import torch
    from torch import nn
    from torch.onnx import register_custom_op_symbolic
    from torch.onnx._internal.torchscript_exporter import symbolic_helper

    FIXPORT_EXAMPLE = {"opset": 12, "export_options": {"custom_opsets": {"rknn_cst": 1}}}


    @symbolic_helper.parse_args("v", "f", "f")
    def cst_threshold(g, x, threshold, value):
        return g.op("rknn_cst::cstThreshold", x, threshold_f=threshold, value_f=value)


    register_custom_op_symbolic("aten::threshold", cst_threshold, 12)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.threshold = nn.Threshold(0.1, 20.0)

        def forward(self, x):
            return self.threshold(self.conv(x)) * 2


    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(1, 3, 6, 6),)
"""

TUPLE_OUTPUT_MODEL = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x):
            y = self.linear(x)
            return {"logits": y, "parts": (y.relu(), y.sum(dim=1))}

    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(2, 4),)
"""


# What real models do (torchvision's Swin assigns into a slice of its attention mask, timm's LeViT
# splits qkv and indexes biases with x[:, idx]): the exporter rewrites these into forms the
# TorchScript interpreter cannot run (onnx::Placeholder, split fused with its ListUnpack).
INTERPRETER_HOSTILE_MODEL = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.biases = nn.Parameter(torch.randn(3, 6))
            self.register_buffer("idx", torch.tensor([[0, 5], [2, 3]]), persistent=False)

        def forward(self, x):
            q, k = x.split([2, 2], dim=1)
            mask = x.new_zeros((4, 4))
            for count, (start, stop) in enumerate(((0, 2), (2, 4))):
                mask[start:stop, start:stop] = count + 1.0
            bias = self.biases[:, self.idx].sum()
            return (q * k + bias) @ mask[:2, :2]

    def build():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(2, 4),)
"""


def _compare(worker, path: Path | str, **arguments) -> CompareResult:
    return worker.run(CompareRequest(ModelRequest(path=str(path)), **arguments))


def test_correct_export_passes_with_nested_output_names(worker, model_file) -> None:
    result = _compare(worker, model_file("tuple_model.py", TUPLE_OUTPUT_MODEL), runs=2)
    assert result.passed, result.to_json()
    assert [o.name for o in result.outputs] == ['out["logits"]', 'out["parts"][0]', 'out["parts"][1]']
    assert result.providers_used == ["CPUExecutionProvider"]
    logits = result.outputs[0]
    assert logits.max_abs < 1e-5 and logits.cosine == pytest.approx(1.0)
    assert logits.scatter.total_elements == 6 and len(logits.scatter.torch_values) == 6
    assert sum(logits.histogram.counts) + logits.histogram.zero_count == 6
    assert result.node_analysis is not None and result.node_analysis.first_divergent is None
    assert len(result.per_run) == 2


def test_wrong_symbolic_fails_and_is_named_first_divergent(worker, model_file) -> None:
    path = model_file("wrong_sigmoid.py", WRONG_SIGMOID_MODEL)
    result = _compare(worker, path, templates_by_instance={})
    assert not result.passed
    analysis = result.node_analysis
    assert analysis is not None and analysis.first_divergent is not None
    first = analysis.first_divergent
    assert first.onnx_kind == "onnx::HardSigmoid" and first.source_kind == "aten::sigmoid"
    sigmoid_line = path.read_text().splitlines().index("        y = torch.sigmoid(self.bn(self.conv(x)) * 3.0)") + 1
    assert first.source == f"wrong_sigmoid.py:{sigmoid_line}"
    assert first.introduced_max_abs is not None and first.introduced_max_abs > 1e-3
    downstream = [n for n in analysis.nodes if n.onnx_kind == "onnx::Gemm"]
    assert downstream and downstream[0].inputs_exceed  # inherited, not introduced
    conv = [n for n in analysis.nodes if n.onnx_kind == "onnx::Conv"]
    assert conv and not conv[0].exceeds
    # the registry is restored after the job: a correct model exports correctly again
    assert _compare(worker, model_file("conv_bn.py", CONV_BN_MODEL)).passed


def test_conv_batchnorm_is_not_blamed(worker, model_file) -> None:
    result = _compare(worker, model_file("conv_bn.py", CONV_BN_MODEL))
    assert result.passed
    analysis = result.node_analysis
    assert analysis is not None and analysis.first_divergent is None
    kinds = {n.onnx_kind: n for n in analysis.nodes}
    assert "onnx::Conv" in kinds and "onnx::BatchNormalization" in kinds  # compared one by one
    assert not kinds["onnx::Conv"].exceeds
    assert any("without constant folding" in m for m in result.messages)


def test_per_node_analysis_runs_where_the_exporter_rewrites_the_trace(worker, model_file) -> None:
    result = _compare(worker, model_file("hostile.py", INTERPRETER_HOSTILE_MODEL))
    assert result.passed, result.to_json()
    assert not [m for m in result.messages
                if m.startswith(("Per-node analysis failed", "Per-node analysis skipped"))], result.messages
    analysis = result.node_analysis
    assert analysis is not None and analysis.first_divergent is None
    compared = {n.source_kind for n in analysis.nodes}
    assert {"aten::index", "aten::mul", "aten::matmul"} <= compared, compared
    assert not any(n.exceeds for n in analysis.nodes)  # slices renumbered by the rewrite are not paired wrongly


def test_numpy_autograd_function_fails_only_on_other_inputs(worker) -> None:
    path = REPO / "examples" / "autograd_numpy.py"
    alone = _compare(worker, path, runs=1, analyze_nodes=False)
    # x's values reach numpy, where the trace warned: other values of x are run too, and fail
    assert alone.per_run[0][0].passed and not alone.passed
    assert alone.run_labels == ["example inputs", "x=other random values (seed 7)"]
    assert not alone.per_run[1][0].passed and alone.baked_inputs[0].startswith("Input x is an input")
    result = _compare(worker, path, runs=2)
    assert not result.passed
    assert result.per_run[0][0].passed and not result.per_run[1][0].passed
    assert result.outputs[0].run >= 1
    assert result.node_analysis is not None and result.node_analysis.run == 1


@pytest.mark.slow
def test_custom_domain_op_runs_on_the_torch_reference(worker, model_file) -> None:
    pytest.importorskip("onnxruntime_extensions")
    result = _compare(worker, model_file("custom_threshold.py", CUSTOM_DOMAIN_MODEL), runs=2)
    assert result.passed, result.to_json()
    assert any("onnxruntime-extensions" in m and "cstThreshold" in m for m in result.messages)
    nodes = {n.source_kind: n for n in result.node_analysis.nodes}
    assert not nodes["aten::threshold"].exceeds


def test_unexportable_model_is_a_clear_error(worker) -> None:
    from fixport.core.foundation.errors import FixportError

    with pytest.raises(FixportError, match="deform_conv2d"):
        _compare(worker, REPO / "examples" / "deform_conv2d.py")


def test_cli_json_contract_and_exit_codes(model_file) -> None:
    completed = run_main("compare", str(model_file("wrong_sigmoid.py", WRONG_SIGMOID_MODEL)), "--json")
    assert completed.returncode == 1, completed.stderr
    payload = json.loads(completed.stdout)
    assert {"provider_requested", "providers_used", "messages", "runs", "outputs", "first_divergent",
            "nodes"} <= set(payload)
    output_keys = {"name", "shape", "dtype", "max_abs", "mean_abs", "max_rel", "rmse", "cosine",
                   "mismatch_fraction", "pass"}
    assert output_keys <= set(payload["outputs"][0])
    first = payload["first_divergent"]
    assert {"onnx_node", "source_kind", "scope", "source", "template", "max_abs"} <= set(first)
    assert first["source_kind"] == "aten::sigmoid"
    # the names before source_*, still written for one release
    assert first["torchscript_kind"] == "aten::sigmoid"
    assert all(node["torchscript_node"] == node["source_node"] for node in payload["nodes"])


@pytest.mark.skipif("CUDAExecutionProvider" in onnxruntime.get_available_providers(),
                    reason="this machine has CUDA: nothing falls back")
def test_cli_cuda_request_falls_back_to_cpu_with_a_message_and_passes(cli) -> None:
    completed = cli("compare", str(REPO / "examples" / "int16_square_dynamo.py"), "--provider", "cuda",
                    "--no-node-analysis", "--json")
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    assert payload["provider_requested"] == "cuda"
    assert payload["providers_used"] == ["CPUExecutionProvider"]
    assert any("CUDA is not available" in m and "CPU instead" in m for m in payload["messages"])


def test_cli_onnx_file_and_project_flag(cli, tmp_path, model_file) -> None:
    model = model_file("conv_bn.py", CONV_BN_MODEL)
    exported = tmp_path / "conv_bn.onnx"
    written = cli("export", str(model), "-o", str(exported))
    assert written.returncode == 0, written.stderr
    completed = cli("compare", str(model), "--onnx", str(exported), "--runs", "2")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "PASS" in completed.stdout and "conv_bn.onnx" in completed.stdout
    missing = cli("compare", str(model), "--project", str(tmp_path / "missing.fixport.json"))
    assert missing.returncode == 2 and "error:" in missing.stderr


@pytest.mark.slow
def test_per_node_analysis_reads_conjugated_fft_values(worker) -> None:
    """torch's conj() of an FFT is a lazy view numpy refuses; the analysis compares it all the same."""
    result = _compare(worker, REPO / "examples" / "corpus" / "fft_conv_kornia.py", options={"exporter": "dynamo"})
    assert result.passed, result.to_json()
    assert not [m for m in result.messages if m.startswith("Per-node analysis failed")], result.messages
    assert result.node_analysis is not None and len(result.node_analysis.nodes) >= 5


BOOL_CUMSUM_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x > 0, dim=1)

    def build():
        return Model(), (torch.randn(2, 5),)
"""


def test_an_export_onnx_runtime_refuses_names_the_node_and_the_command_that_fixes_it(worker, model_file) -> None:
    """A bool CumSum exports, but ONNX Runtime has no kernel for it: no raw ORT error, the way on."""
    from fixport.core.foundation.errors import FixportError

    with pytest.raises(FixportError, match="does not load in ONNX Runtime") as raised:
        _compare(worker, model_file("bool_cumsum.py", BOOL_CUMSUM_MODEL))
    assert "CumSum" in str(raised.value) and "(aten::cumsum at bool_cumsum.py:6)" in raised.value.message
    assert "main.py fix bool_cumsum.py --exporter torchscript --auto -o fixes.fixport.json" in raised.value.hint


def test_a_compare_after_fix_never_advises_the_fix_just_run(worker, model_file) -> None:
    """With a project's fixes (compare --project), what ONNX Runtime still refuses gets the advice that
    follows fix --auto, not fix --auto again."""
    from fixport.core.foundation.errors import FixportError

    with pytest.raises(FixportError, match="does not load in ONNX Runtime") as raised:
        _compare(worker, model_file("bool_cumsum.py", BOOL_CUMSUM_MODEL), from_project=True)
    assert "--auto" not in raised.value.hint and "main.py fix" not in raised.value.hint
    assert "write one in the window (a stub is generated from its schema)" in raised.value.hint


def test_random_values_the_model_refuses_are_skipped_with_a_note(worker, model_file) -> None:
    """SigLIP2 refuses random spatial shapes: the other input set is left out and said, not an error."""
    path = model_file("picky.py", """
        import torch

        class Picky(torch.nn.Module):
            def forward(self, x, mode):
                if bool((mode != torch.tensor([7, 0, 3, 5])).any()):
                    raise ValueError("mode must be 7, 0, 3, 5")
                return x * 2

        def build():
            return Picky(), (torch.randn(2, 3), torch.tensor([7, 0, 3, 5]))
    """)
    result = worker.run(CompareRequest(ModelRequest(str(path)), runs=2, analyze_nodes=False))
    assert result.outputs and "random, seed 1" not in result.run_labels, result.run_labels
    assert any("Input set 2" in m and "refuses these random values" in m for m in result.messages), result.messages


# The tracer records the example's 2 rows as a constant: at 5 rows ONNX Runtime's Reshape fails,
# so neither output is produced there (issue 44.6: such rows showed max abs nan and a mismatch share).
BAKED_ROWS_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            rows = int(x.shape[0] * 1.0)  # a float product: no size-keeping rewrite fits it
            return (x * 2).reshape(rows, 2, 2), x.sum(dim=1)

    def build():
        torch.manual_seed(0)
        return Model(), (torch.randn(2, 4),)
"""
STATISTICS = ("max_abs", "mean_abs", "max_rel", "rmse", "cosine", "mismatch_count", "mismatch_fraction")


def test_outputs_onnx_runtime_never_produced_say_why_instead_of_statistics(worker, model_file, capsys) -> None:
    """One comparison, read as `compare --json` and as `compare` print it."""
    from fixport.cli.app import build_parser
    from fixport.cli.arguments import job_arguments, shape_sets
    from fixport.cli.compare import print_comparison

    args = build_parser().parse_args([
        "compare", str(model_file("baked_rows.py", BAKED_ROWS_MODEL)), "--dynamic-axes", '{"x": {"0": "batch"}}',
        "--shapes", "x=5x4"])
    request, options, mappings = job_arguments(args)
    result = worker.run(CompareRequest(request, options, mappings, other_shapes=shape_sets(args), runs=1,
                                       analyze_nodes=False, latency_runs=0))
    assert not result.passed and result.run_labels[1] == "x=5x4"
    rows = result.to_json()["outputs"]
    assert [(row["name"], row["produced"], row["compared"], row["pass"], row["worst_run"]) for row in rows] == [
        ("out[0]", False, False, False, 1), ("out[1]", False, False, False, 1)]
    for row in rows:
        assert {key: row[key] for key in STATISTICS} == dict.fromkeys(STATISTICS)  # null, never "nan"
        assert row["problem"] == ("ONNX Runtime fails at x=5x4: Reshape node '/Reshape': The input tensor cannot be "
                                  "reshaped to the requested shape. Input shape:{5,4}, requested shape:{2,2,2}")
    capsys.readouterr()
    print_comparison(result)
    table = capsys.readouterr().out.split("result\n", 1)[1]
    assert "nan" not in table and "%" not in table
    assert "FAIL (not produced at input set 2: ONNX Runtime fails at x=5x4: Reshape node '/Reshape'" in table


def test_an_output_of_another_size_is_not_measured_and_one_of_the_same_size_is() -> None:
    import numpy as np

    from fixport.core.statistics.output_stats import compare_arrays

    other = compare_arrays("y", np.zeros((2, 3), np.float32), np.zeros((4,), np.float32), 1e-3, 1e-5)
    assert (other.produced, other.compared, other.passed) == (True, False, False)
    assert other.to_json()["max_abs"] is None and other.problem.startswith("shape differs")
    same = compare_arrays("y", np.zeros((2, 3), np.float32), np.ones((6,), np.float32), 1e-3, 1e-5)
    assert same.compared and same.to_json()["max_abs"] == 1.0 and same.mismatch_count == 6


def test_the_compare_dock_shows_no_statistics_for_an_output_never_produced(qtbot) -> None:
    import numpy as np

    from fixport.core.statistics.output_stats import NOT_MEASURED, compare_arrays, missing_output, worst_of_runs
    from fixport.gui.compare_dock import CompareDock

    value = np.ones((2, 2), np.float32)
    produced = compare_arrays("out[0]", value, value, 1e-3, 1e-5, run=0)
    never = missing_output("out[0]", np.ones((5, 2), np.float32), 1e-3, 1e-5, 1, "ONNX Runtime fails at x=5x4")
    row = worst_of_runs([produced, never])
    dock = CompareDock()
    qtbot.addWidget(dock)
    dock.show_result(CompareResult("m.py", "export (opset 17)", "cpu", ["CPUExecutionProvider"], 2, [row]))
    shown = [dock.table.item(0, column).text() for column in range(dock.table.columnCount())]
    assert shown[3:9] == [NOT_MEASURED] * 6
    assert shown[9] == "FAIL not produced at input set 2: ONNX Runtime fails at x=5x4"
    plots = dock._ensure_plots()  # max abs per output: no bar at a made-up height, the tick says so
    assert plots.per_output.getAxis("bottom")._tickLevels[0][0][1] == "out[0] —"


@pytest.mark.slow
def test_compare_exporters_says_which_outputs_onnx_runtime_never_produced(cli, model_file) -> None:
    compared = cli("compare", str(model_file("baked_rows.py", BAKED_ROWS_MODEL)), "--exporters", "torchscript,dynamo",
                   "--dynamic-axes", '{"x": {"0": "batch"}}', "--shapes", "x=5x4", "--runs", "1")
    assert compared.returncode == 1, compared.stderr
    torchscript = compared.stdout.split("\ntorchscript: ", 1)[1].split("\ndynamo: ", 1)[0]
    assert "against torch, out[0]: not produced at input set 2 (ONNX Runtime fails at x=5x4: Reshape" in torchscript
    assert "nan" not in torchscript


# A decoder returning (logits, [key, value]) whose heads are split by a scripted helper (as some
# transformers models do): the export keeps that list as an ONNX sequence (SplitToSequence), which
# ONNX Runtime returns as a Python list, not an array. A wrong sigmoid makes the nodes after it fail,
# so the groups reading the sequence are among those re-run alone.
SEQUENCE_DECODER_MODEL = """
    from typing import List

    import torch
    from torch import nn
    from torch.onnx import register_custom_op_symbolic

    FIXPORT_EXAMPLE = {"opset": 17}


    def wrong_sigmoid(g, x):
        return g.op("HardSigmoid", x)


    register_custom_op_symbolic("aten::sigmoid", wrong_sigmoid, 17)


    @torch.jit.script
    def split_heads(x: torch.Tensor, heads: int) -> List[torch.Tensor]:
        return list(torch.split(x, x.size(-1) // heads, dim=-1))


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(11, 8)
            self.kv = nn.Linear(8, 16)
            self.head = nn.Linear(8, 11)

        def forward(self, ids):
            h = torch.sigmoid(self.embed(ids) * 3)
            key = torch.cat(split_heads(self.kv(h), 4), dim=-1)[..., :8]
            value = torch.softmax(h @ key.transpose(1, 2), dim=-1) @ h
            return self.head(value), [key, value]


    def build():
        torch.manual_seed(0)
        return Decoder().eval(), (torch.randint(0, 11, (1, 5)),)
"""


def test_per_node_analysis_takes_a_decoder_whose_values_hold_a_list(worker, model_file) -> None:
    result = _compare(worker, model_file("sequence_decoder.py", SEQUENCE_DECODER_MODEL), templates_by_instance={})
    assert not result.passed
    assert [o.name for o in result.outputs] == ["out[0]", "out[1][0]", "out[1][1]"]
    assert not [m for m in result.messages if "Per-node analysis failed" in m], result.messages
    assert not result.internal_errors, result.internal_errors
    analysis = result.node_analysis
    assert analysis is not None and analysis.first_divergent is not None
    assert analysis.first_divergent.source_kind == "aten::sigmoid"
    # the cat reads the sequence: torch keeps no value for it, so it is not re-run alone, and says so
    cat = [n for n in analysis.nodes if n.source_kind == "aten::cat"]
    assert cat and cat[0].exceeds and cat[0].introduced_max_abs is None
    assert "is a sequence" in cat[0].note
