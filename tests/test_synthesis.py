"""Issue 11: `fix --auto` fixes the long tail by itself with synthesized fixes, chosen by running.

Real one-op models at opset 17, real exports, real ONNX Runtime sessions: the 1:1 standard op,
the torch_lib bridge below opset 18, torch's decomposition replayed, ops with several outputs.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from fixport.core.loaders.loading import load_model
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest

ONE_OP_MODEL = '''
import torch

FIXPORT_EXAMPLE = {{"opset": 17}}


class OneOp(torch.nn.Module):
    def forward(self, x):
        return {expression}


def build():
    torch.manual_seed(0)
    return OneOp().eval(), (torch.randn(3, 5),)
'''

# op kind -> (expression of x, family fix --auto must pick)
FAST_SUBSET = {
    "aten::cosh": ("torch.cosh(x)", "standard_op"),
    "aten::sinh": ("torch.sinh(x)", "standard_op"),
    "aten::expm1": ("torch.expm1(x)", "torchlib_bridge"),
    "aten::trunc": ("torch.trunc(x * 3)", "torchlib_bridge"),
    "aten::xlogy": ("torch.xlogy(x.abs(), x.abs() + 1)", "torchlib_bridge"),
    "aten::logaddexp": ("torch.logaddexp(x, x * 2)", "torchlib_bridge"),
    "aten::inner": ("torch.inner(x, x)", "decomposition_replay"),  # a scalar reshape once crashed torch
    "aten::linalg_vecdot": ("torch.linalg.vecdot(x, x)", "decomposition_replay"),
    "aten::unbind_copy": ("torch.unbind_copy(x, 1)", "decomposition_replay"),  # a list of outputs
    "aten::exp2": ("torch.exp2(x)", "torchlib_bridge"),  # Constant(value_int) recorded by torch_lib
    "aten::cummax": ("torch.cummax(x, 1)", "decomposition_replay"),  # Fixport's decomposition, two outputs
    "aten::lgamma": ("torch.lgamma(x)", "decomposition_replay"),
    "aten::linalg_solve": ("torch.linalg.solve(x[:, :3] + 3 * torch.eye(3), x)", "decomposition_replay"),  # LU
    "aten::deg2rad": ("torch.deg2rad(x)", "torchlib_bridge"),
    # torch's symbolic writes negative dims into Transpose's perm (Mamba2): ORT refuses it
    "aten::permute": ("(x[None] * 2).permute(0, -1, -2)", "torchlib_bridge"),
    "aten::_native_batch_norm_legit_no_training": (
        "torch.ops.aten._native_batch_norm_legit_no_training(x[None], None, None, torch.zeros(3), torch.ones(3), "
        "0.1, 1e-5)", "decomposition_replay"),
}


def _one_op_file(directory: Path, expression: str) -> Path:
    path = directory / "one_op.py"
    path.write_text(ONE_OP_MODEL.format(expression=expression), encoding="utf-8")
    return path


def _max_abs_vs_torch(onnx_path: Path, model_path: Path) -> float:
    loaded = load_model(model_path)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    actual = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), loaded.example_inputs)})
    assert len(actual) == len(expected)
    assert [a.shape for a in actual] == [tuple(e.shape) for e in expected]
    return max(float(np.max(np.abs(a.astype(np.float64) - e.numpy().astype(np.float64)), initial=0.0))
               for a, e in zip(actual, expected))


@pytest.mark.parametrize("kind", list(FAST_SUBSET))
def test_fix_auto_fixes_the_long_tail_at_opset_17(worker, kind: str, tmp_path: Path) -> None:
    expression, family = FAST_SUBSET[kind]
    model = _one_op_file(tmp_path, expression)
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), output=str(onnx_path)))
    assert [p.kind for p in result.before.unsupported] == [kind]
    assert result.after.unsupported == [], [p.message for p in result.after.unsupported]
    assert result.opset_raised is None and result.after.options.opset == 17
    assert [(c.kind, c.family) for c in result.choices] == [(kind, family)], result.rejected
    assert all(node.kind.split("::")[0] == "onnx" for node in result.after.onnx_graph.nodes)
    assert _max_abs_vs_torch(onnx_path, model) <= 1e-5


HOMOGRAPHY_MODEL = """
import kornia
import torch


class Homography(torch.nn.Module):
    def forward(self, points_a, points_b):
        return kornia.geometry.homography.find_homography_dlt(points_a, points_b)


def build():
    torch.manual_seed(0)
    return Homography(), (torch.rand(1, 8, 2), torch.rand(1, 8, 2))
"""


@pytest.mark.slow
def test_a_replayed_op_fed_by_another_fix_keeps_its_traced_shapes(worker, tmp_path: Path) -> None:
    """kornia's homography: linalg_solve_ex's input comes out of the LU fixes, whose nodes ONNX
    shape inference does not see through; the replay takes the shapes the trace recorded."""
    pytest.importorskip("kornia")
    model = tmp_path / "homography.py"
    model.write_text(HOMOGRAPHY_MODEL, encoding="utf-8")
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), output=str(onnx_path)))
    assert "aten::linalg_solve_ex" in {c.kind for c in result.choices}, result.rejected
    assert result.after.unsupported == [], [p.message for p in result.after.unsupported]
    assert _max_abs_vs_torch(onnx_path, model) <= 1e-3


@pytest.mark.slow
def test_fix_auto_cli_names_the_family_and_the_script_reproduces_it(cli, tmp_path: Path) -> None:
    model = _one_op_file(tmp_path, "torch.inner(x, x * 2)")
    project = tmp_path / "inner.fixport.json"
    fixport_onnx = tmp_path / "fixport.onnx"
    fixed = cli("fix", str(model), "--auto", "-o", str(project), "--onnx", str(fixport_onnx), "--json")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    report = json.loads(fixed.stdout)
    assert [(c["kind"], c["family"]) for c in report["fixed"]] == [("aten::inner", "decomposition_replay")]
    script = tmp_path / "fix_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    script_onnx = tmp_path / "script.onnx"
    ran = subprocess.run([sys.executable, str(script), "-o", str(script_onnx)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "carry_module('fixport.symbolics.synthesis.replay'" in script.read_text()
    # The script reproduces Fixport's own export exactly; both match torch to float32 rounding
    # (inner() sums products near 10: one ulp there is about 1e-6, and ORT's summation order is its own).
    assert onnx.load(str(script_onnx)).graph == onnx.load(str(fixport_onnx)).graph
    assert _max_abs_vs_torch(script_onnx, model) <= 4e-6


def test_fix_auto_reports_an_op_nothing_fixes_without_a_custom_node(worker, tmp_path: Path) -> None:
    # no 1:1 op, no torch_lib, no decomposition that converts (LDL pivots), not linear
    model = _one_op_file(tmp_path, "torch.linalg.ldl_factor(x @ x.transpose(0, 1))")
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), keep_opset=False))
    assert [p.kind for p in result.after.unsupported] == ["aten::linalg_ldl_factor"]
    assert all(c.family != "custom_domain" for c in result.choices)
    assert "aten::linalg_ldl_factor" in result.no_template


def test_fix_auto_with_keep_opset_falls_back_to_a_custom_node_with_all_outputs(worker, tmp_path: Path) -> None:
    model = _one_op_file(tmp_path, "torch.linalg.ldl_factor(x @ x.transpose(0, 1))")
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), keep_opset=True))
    assert [(c.kind, c.family, c.runs_in_onnxruntime) for c in result.choices] == [
        ("aten::linalg_ldl_factor", "custom_domain", False)]
    (node,) = [n for n in result.after.onnx_graph.nodes if n.kind.startswith("custom::")]
    assert len(node.outputs) == 2
    assert {p.reason for p in result.after.unsupported} == {"runtime_error"}
