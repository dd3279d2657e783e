"""`python main.py check|export` as a user runs them: exit codes, JSON contract, files written."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from fixport.core.project.project import Project, save_project
from tests.conftest import run_main
from tests.test_cli_json_errors import TRACER_REFUSES_MODEL

CHECK_KEYS = {"model", "opset", "exporter", "source_nodes", "onnx_nodes", "unsupported"}
PROBLEM_KEYS = {"kind", "instance", "reason", "message", "scope", "source", "first_supported_opset"}

FAILING_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = torch.nn.Threshold(0.1, 20.0)

        def forward(self, x):
            return torch.asinh(self.act(x))

    def build():
        return Model(), (torch.randn(1, 3, 4, 4),)
"""

CLEAN_MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),)
"""


def test_check_reports_every_problem_in_one_run(cli, model_file) -> None:
    result = cli("check", str(model_file("failing.py", FAILING_MODEL)), "--opset", "12", "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert CHECK_KEYS <= set(report)
    assert report["exporter"] == "torchscript" and report["opset"] == 12
    problems = {p["kind"]: p for p in report["unsupported"]}
    assert set(problems) == {"aten::threshold", "aten::asinh"}
    assert all(PROBLEM_KEYS <= set(p) for p in report["unsupported"])
    assert problems["aten::threshold"]["reason"] == "symbolic_rejected"
    assert "non-zero threshold" in problems["aten::threshold"]["message"]
    assert problems["aten::threshold"]["scope"] == "act"
    assert problems["aten::asinh"]["reason"] == "no_symbolic"
    assert problems["aten::asinh"]["source"] == "failing.py:10"


def test_check_text_report_and_clean_exit(model_file) -> None:
    clean = run_main("check", str(model_file("clean.py", CLEAN_MODEL)))
    assert clean.returncode == 0, clean.stderr
    assert "OK" in clean.stdout
    failing = run_main("check", str(model_file("failing.py", FAILING_MODEL)), "--opset", "12")
    assert failing.returncode == 1
    assert "aten::threshold  [symbolic_rejected]" in failing.stdout
    assert "Traceback" not in failing.stdout + failing.stderr


def test_trace_failure_names_the_users_line(cli, model_file) -> None:
    path = model_file("trace_fails.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return x.not_a_tensor_method()

        def build():
            return Model(), (torch.randn(2),)
    """)
    result = cli("check", str(path))
    assert result.returncode == 2
    assert "trace_fails.py line 6" in result.stderr
    assert "Traceback" not in result.stderr
    # forward() itself fails here (in eager torch too): the advice stays on forward(), not the tracer
    assert "Tracing the model failed" in result.stderr and "fix it there" in result.stderr
    assert "--exporter dynamo" not in result.stderr


def test_a_trace_failure_where_forward_runs_blames_the_tracer_and_names_dynamo(cli, model_file) -> None:
    """forward() runs in eager torch; torch.jit.trace refuses a plain tensor attribute that requires
    grad. The advice must not send the user to fix forward(): the dynamo exporter takes the model."""
    path = model_file("tracer_refuses.py", TRACER_REFUSES_MODEL)
    traced = cli("check", str(path))
    assert traced.returncode == 2
    assert "TorchScript tracer fails on this model, whose forward() runs in eager torch" in traced.stderr
    assert "Cannot insert a Tensor that requires grad" in traced.stderr
    assert "tracer_refuses.py line 11" in traced.stderr
    assert "--exporter dynamo" in traced.stderr and "fix it there" not in traced.stderr
    exported = cli("check", str(path), "--exporter", "dynamo")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "OK: the model exports, runs in ONNX Runtime and matches torch" in exported.stdout


BOOL_DEFAULT_MODEL = """
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)

        def forward(self, x, attn_mask=None, is_causal: bool = False):  # like timm's EVA
            q, k, v = self.qkv(x).unflatten(-1, (3, 2, 4)).permute(2, 0, 3, 1, 4)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)

    def build():
        torch.manual_seed(0)
        return Attention().eval(), (torch.randn(1, 5, 8),)
"""


@pytest.mark.slow
def test_forward_defaults_stay_python_values(cli, model_file, tmp_path: Path) -> None:
    """torch.onnx.export alone fails here: it passes the bool default as a traced tensor."""
    model = model_file("bool_default.py", BOOL_DEFAULT_MODEL)
    checked = cli("check", str(model))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    project = tmp_path / "bool_default.fixport.json"
    save_project(Project(model_path=str(model)), project)  # no fixes: the script is the plain export
    script = tmp_path / "export_bool_default.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "bool_default.onnx"
    completed = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0 and output.exists(), completed.stderr[-3000:]
    assert [i.name for i in onnx.load(str(output)).graph.input] == ["x"]


def test_a_model_that_returns_nothing_is_told_so(cli, model_file) -> None:
    model = model_file("returns_none.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                self.last = x * 2  # kept, not returned

        def build():
            return Model(), (torch.randn(2, 3),)
    """)
    checked = cli("check", str(model))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "returned no tensor" in checked.stderr and "Traceback" not in checked.stderr


def test_export_writes_a_checked_model_atomically(cli, model_file, tmp_path: Path) -> None:
    out = tmp_path / "out" / "clean.onnx"
    result = cli("export", str(model_file("clean.py", CLEAN_MODEL)), "--opset", "13", "-o", str(out),
                 "--input-names", "features", "--output-names", "scores",
                 "--dynamic-axes", '{"features": {"0": "batch"}}')
    assert result.returncode == 0, result.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["features"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert not any(a.name == "fixport_origin" for n in model.graph.node for a in n.attribute)
    assert [p.name for p in out.parent.iterdir()] == ["clean.onnx"]  # no temp files left behind


def test_export_refuses_while_nodes_are_unsupported(cli, model_file, tmp_path: Path) -> None:
    out = tmp_path / "never.onnx"
    result = cli("export", str(model_file("failing.py", FAILING_MODEL)), "--opset", "12", "-o", str(out))
    assert result.returncode == 1
    assert not out.exists()
    assert "Not written" in result.stdout
    assert "--auto -o fixes.fixport.json" in result.stdout.split("Not written", 1)[1]  # what to do, per kind


@pytest.mark.parametrize("args, message", [
    (["check", "no/such/model.py"], "Model file not found"),
    (["check", "README.md"], "Unknown model file type"),
    (["check", "main.py", "--input", "x=oops"], "Cannot read the input specification"),
])
def test_bad_input_exits_2_with_a_message(args: list[str], message: str) -> None:
    result = run_main(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
