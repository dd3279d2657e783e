"""Issue 15's foundation: the torch.export-based exporter (dynamo=True) behind the same interface.

Real dynamo exports in the worker and real ONNX Runtime sessions: every example that declares
what `check --exporter dynamo` must report finds exactly that, in one run; the clean ResNet-18
exports, runs, and its ONNX nodes map to the FX nodes they came from.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import Project, load_project, project_from_json, save_project
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.errors import ExportError
from fixport.examples.catalog import ExampleFormatError, example_path, list_examples, read_example
from tests.conftest import run_main, slow_but_one

DYNAMO_EXAMPLES = [e for e in list_examples() if e.expected_unsupported_dynamo is not None]
DYNAMO = {"exporter": "dynamo"}


def test_the_dynamo_corpus_covers_each_failure_stage() -> None:
    reasons = {entry["reason"] for e in DYNAMO_EXAMPLES for entry in e.expected_unsupported_dynamo or []}
    assert {"capture_failed", "no_onnx_function", "runtime_error"} <= reasons
    assert any(e.expected_unsupported_dynamo == [] for e in DYNAMO_EXAMPLES)


@pytest.mark.parametrize("example", slow_but_one(DYNAMO_EXAMPLES, "custom_ops_dynamo", lambda e: e.name))
def test_dynamo_example_reports_exactly_its_declared_problems(worker, example) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example.path)), options=DYNAMO))
    assert result.options.exporter == "dynamo"
    found = Counter((p.kind, p.reason) for p in result.unsupported)
    assert found == Counter({(e["kind"], e["reason"]): e["count"] for e in example.expected_unsupported_dynamo})
    assert result.source_graph is not None and result.source_graph.kind == "fx"
    for problem in result.unsupported:
        assert problem.message and problem.instance
        assert problem.source.startswith(f"{example.path.name}:"), problem  # the user's line, not torch's
        if problem.reason != "capture_failed":
            node = result.source_graph.node_by_id[problem.instance]  # names its FX node
            assert node.unsupported or problem.reason in ("runtime_error", "mismatch")  # runs, but fails or differs


@pytest.mark.slow
def test_capture_failure_names_each_line_and_what_to_do(worker) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("branch_on_value_dynamo"))), options=DYNAMO))
    lines = {p.source for p in result.unsupported}
    assert lines == {"branch_on_value_dynamo.py:40", "branch_on_value_dynamo.py:42"}
    said = {p.source.rpartition(":")[2]: p.message for p in result.unsupported}  # what to change, at each line
    assert "torch.where" in said["40"] and "torch._check(count >= 0)" in said["42"]
    assert all(p.code_change.startswith("--- branch_on_value_dynamo.py") for p in result.unsupported)
    assert "if scores.max() > 0.5:" in " ".join(p.message for p in result.unsupported)
    # draft_export still gives a graph to look at, with the user's lines and module scopes
    assert {n.scope for n in result.source_graph.nodes} >= {"linear"}


@pytest.mark.slow
def test_clean_resnet_exports_runs_and_maps_onnx_nodes_to_fx_nodes(worker, tmp_path: Path) -> None:
    output = tmp_path / "resnet.onnx"
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("resnet18_clean"))), options=DYNAMO,
                                       output=str(output)))
    assert result.unsupported == [] and result.saved_files == [str(output)]
    fx = result.source_graph
    assert {"layer1/0/conv1", "layer4/1/bn2", "fc"} <= {n.scope for n in fx.nodes}
    assert Counter(n.kind for n in fx.nodes)["aten::conv2d.default"] == 20
    assert all(n.source.startswith("resnet.py:") for n in fx.nodes if n.kind == "aten::conv2d.default")
    convs = [n for n in result.onnx_graph.nodes if n.op_type == "Conv"]
    assert len(convs) == 20, Counter(n.kind for n in result.onnx_graph.nodes)
    assert all(n.origin and n.origin[0] in fx.node_by_id for n in convs)
    assert sum(bool(n.origin) for n in result.onnx_graph.nodes) == len(result.onnx_graph.nodes)
    assert all(n.scope for n in convs)  # grouped like the FX side
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {session.get_inputs()[0].name: np.random.rand(1, 3, 64, 64).astype(np.float32)})
    assert logits.shape == (1, 1000)


def test_cli_check_and_export_with_the_dynamo_exporter(tmp_path: Path) -> None:
    # New processes (run_main): on one warm worker, the TorchScript check after the dynamo one loses
    # the file's own symbolics (test_a_model_files_symbolics_survive_a_dynamo_job_on_the_same_worker).
    custom = example_path("custom_ops_dynamo")
    checked = run_main("check", str(custom), "--exporter", "dynamo", "--json")
    assert checked.returncode == 1, checked.stderr
    report = json.loads(checked.stdout)
    assert report["exporter"] == "dynamo" and report["source_graph"] == "fx"
    assert sorted(p["kind"] for p in report["unsupported"]) == ["mydyn::gate.default", "mydyn::softclip.default"]
    assert run_main("check", str(custom)).returncode == 0  # TorchScript, the default, has symbolics for both

    output = tmp_path / "square.onnx"
    exported = run_main("export", str(example_path("int16_square_dynamo")), "--exporter", "dynamo", "-o",
                        str(output))
    assert exported.returncode == 1 and not output.exists()
    assert "aten::pow.Tensor_Scalar" in exported.stdout and "FX (torch.export) nodes" in exported.stdout


def test_a_model_files_symbolics_survive_a_dynamo_job_on_the_same_worker(worker) -> None:
    """The window does this: check with dynamo, then with TorchScript, on one worker. The file
    registers its symbolics when it runs; the worker drops them after each job, so a model whose
    loading registers any is loaded again for every job instead of kept in the model cache."""
    request = ModelRequest(str(example_path("custom_ops_dynamo")))
    assert worker.run(AnalyzeRequest(request, options={"exporter": "dynamo"})).unsupported
    assert worker.run(AnalyzeRequest(request)).unsupported == []  # the file registers symbolics for both ops


def test_projects_remember_the_exporter(tmp_path: Path) -> None:
    path = tmp_path / "m.fixport.json"
    save_project(Project(model_path=str(example_path("resnet18_clean")), export_options=DYNAMO), path)
    assert json.loads(path.read_text())["format_version"] == 3
    assert load_project(path).export_options["exporter"] == "dynamo"
    old = project_from_json({"format_version": 2, "model_path": "m.py", "export_options": {"opset": 14}})
    assert old.export_options == {"opset": 14}  # a v2 file asks for nothing: the TorchScript default
    with pytest.raises(ExportError, match="Unknown exporter"):
        ExportOptions(exporter="jit").validate()


def test_catalog_rejects_a_bad_dynamo_declaration(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def build(): pass\nFIXPORT_EXAMPLE = {'title': 't', 'description': 'd', 'opset': 18,"
                   " 'export_options': {}, 'fix_tolerance': 1e-4, 'expected_unsupported': [],"
                   " 'expected_unsupported_dynamo': [{'kind': 'aten::x', 'reason': 'broken', 'count': 1}]}\n")
    with pytest.raises(ExampleFormatError, match="broken"):
        read_example(bad)


T5_MODEL = """
import torch
from transformers import T5Config, T5ForConditionalGeneration


class Seq2Seq(torch.nn.Module):
    def __init__(self):
        super().__init__()
        config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4)
        self.model = T5ForConditionalGeneration(config).eval()

    def forward(self, input_ids, decoder_input_ids):
        return self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False).logits


def build():
    torch.manual_seed(0)
    return Seq2Seq().eval(), (torch.randint(0, 64, (1, 8)), torch.randint(0, 64, (1, 4)))
"""


@pytest.mark.slow
def test_a_failing_exporter_pass_is_a_problem_at_the_users_line(cli, model_file) -> None:
    """transformers' T5: torch.onnx's type-promotion pass replays a reshape as a view of a
    non-contiguous tensor and raises; check lists it (exit 1) instead of failing (exit 2)."""
    pytest.importorskip("transformers")
    ran = cli("check", str(model_file("t5_tiny.py", T5_MODEL)), "--exporter", "dynamo", "--json")
    if ran.returncode == 0:
        pytest.skip("this torch's exporter prepares T5's graph: nothing to diagnose")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    problems = json.loads(ran.stdout)["unsupported"]
    assert [(p["reason"], p["kind"]) for p in problems] == [("export_failed", "aten::view.default")]
    assert problems[0]["source"].startswith("modeling_t5.py:") and "--exporter torchscript" in problems[0]["message"]
