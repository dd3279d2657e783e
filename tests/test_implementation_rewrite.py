"""Inlining a custom op whose Python implementation cannot be captured as written (a branch on
a tensor's value, a check that raises): a copy with that line rewritten (torch.where,
torch._check) is inlined instead, by either exporter, and holds at values that take the other
branch. Real torch.onnx exports, real ONNX Runtime.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.torch_export.implementation_rewrite import rewritten_implementation
from fixport.core.loaders.loading import load_model
from fixport.core.records.fix_records import TrialStage
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest

DYNAMO = {"exporter": "dynamo", "opset": 17}  # at 17, where ReduceMax refuses what the rewrite leaves

BRANCH_ON_VALUE = '''
import torch


@torch.library.custom_op("fixport_test_branch::normalise_if_large", mutates_args=())
def normalise_if_large(x: torch.Tensor, limit: float) -> torch.Tensor:
    peak = x.abs().max()
    y = x * 1.0
    if peak > limit:
        y = x / peak * limit
    return y


@normalise_if_large.register_fake
def _(x, limit):
    return torch.empty_like(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(normalise_if_large(self.linear(x), 1.5))


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(2, 8) * 3,)
'''

LOOP_ON_VALUES = '''
import torch


@torch.library.custom_op("fixport_test_loop::halve_until_small", mutates_args=())
def halve_until_small(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    while y.abs().max() > 1:
        y = y / 2
    return y
'''


def _runs_like_torch(path: Path, model: Path, scale: float) -> None:
    """The ONNX file against torch on the example input scaled by ``scale``."""
    loaded = load_model(model)
    (x,) = loaded.example_inputs
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: (x * scale).numpy()})
    with torch.no_grad():
        expected = loaded.module(x * scale).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_a_branch_on_a_value_in_a_custom_op_is_rewritten_and_inlined(worker, model_file, tmp_path: Path) -> None:
    """The plain inline fails on the guard; the rewritten copy replaces the op. Its node alone
    leaves aten::max (ReduceMax) refused at opset 17, so it is decided on the whole model, and the
    opset is raised. The export holds on both sides of the branch."""
    model, output = model_file("branch.py", BRANCH_ON_VALUE), tmp_path / "branch.onnx"
    checked = worker.run(AnalyzeRequest(ModelRequest(str(model)), options=dict(DYNAMO)))
    (problem,) = checked.unsupported
    assert problem.kind == "fixport_test_branch::normalise_if_large.default"
    assert problem.decomposed_from == "" and "while decomposing" not in problem.message  # a captured op itself

    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    (choice,) = [c for c in result.choices if c.kind == problem.kind]
    assert choice.template_id == "synthesized.rewritten_implementation.normalise_if_large"
    assert "torch.where" in choice.why
    (mapping,) = [m for m in result.mappings if m.target_kind == problem.kind]
    assert "y = torch.where(peak > limit, x / peak * limit, y)" in mapping.source
    assert any(r.candidate == "dynamo.inline_implementation" and "GuardOnDataDependentSymNode" in r.reason
               for r in result.rejected), result.rejected
    assert any(r.stage == TrialStage.NODE_UNDECIDED and "leaves aten::max.default to fix" in r.reason
               for r in result.rejected), result.rejected
    assert result.whole_model_trials >= 1
    _runs_like_torch(output, model, 1.0)  # the branch taken
    _runs_like_torch(output, model, 0.01)  # the branch not taken: not specialised to the values seen


@pytest.mark.slow
def test_a_fix_onnx_runtime_runs_comes_before_a_custom_domain_node(worker, model_file) -> None:
    """With --keep-opset custom-domain nodes are allowed, and the custom op's node alone takes one;
    the rewritten implementation, which the node could not decide, is still tried first (on the
    whole model) and kept. The custom-domain node alone exports at opset 17 (only custom nodes:
    nothing for ONNX's version converter to do)."""
    model = model_file("branch.py", BRANCH_ON_VALUE)
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), keep_opset=True))
    chosen = {c.kind: c.template_id for c in result.choices}
    assert chosen["fixport_test_branch::normalise_if_large.default"] == \
        "synthesized.rewritten_implementation.normalise_if_large", result.rejected
    assert not any("Target opset version" in r.reason for r in result.rejected), result.rejected


def test_the_torchscript_route_replays_the_same_rewrite(worker, model_file, tmp_path: Path) -> None:
    """TorchScript's inlined implementation fails on the same guard; the same rewrite, rendered as
    a replay template, fixes it and holds on both sides of the branch."""
    model, output = model_file("branch.py", BRANCH_ON_VALUE), tmp_path / "branch_ts.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), {"exporter": "torchscript"}, output=str(output)))
    assert result.after.unsupported == [], result.rejected
    (choice,) = result.choices
    assert choice.template_id == "synthesized.rewritten_implementation.normalise_if_large"
    assert any(r.candidate.startswith("synthesized.inlined") and "cannot be traced" in r.reason
               for r in result.rejected), result.rejected
    _runs_like_torch(output, model, 1.0)
    _runs_like_torch(output, model, 0.01)


@pytest.mark.slow
def test_the_fix_script_inlines_the_rewritten_copy(cli, model_file, tmp_path: Path) -> None:
    model, project = model_file("branch.py", BRANCH_ON_VALUE), tmp_path / "branch.fixport.json"
    fixed = cli("fix", str(model), "--exporter", "dynamo", "--opset", "18", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    script = tmp_path / "branch_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    completed = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    _runs_like_torch(output, model, 0.01)


def _sample(path: Path, arguments: tuple) -> tuple[tuple, dict]:
    """The op's arguments, once the file that defines the op is imported."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return arguments, {}


def test_a_loop_on_values_has_no_mechanical_rewrite(model_file) -> None:
    """A loop whose count depends on the values has no branchless form: no rewrite is offered,
    and the reason names the line."""
    path = model_file("halve.py", LOOP_ON_VALUES)
    sample = _sample(path, (torch.randn(6, 3) * 8,))
    why = rewritten_implementation("fixport_test_loop::halve_until_small.default", sample)
    assert isinstance(why, str) and "halve.py:8" in why and "no mechanical rewrite" in why, why


def test_an_implementation_that_captures_needs_no_rewrite(model_file) -> None:
    path = model_file("plain.py", '''
import torch


@torch.library.custom_op("fixport_test_plain::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2
''')
    sample = _sample(path, (torch.randn(3),))
    assert rewritten_implementation("fixport_test_plain::twice.default", sample) is None


def test_a_check_that_raises_on_values_becomes_torch_check(model_file) -> None:
    path = model_file("checked.py", '''
import torch


@torch.library.custom_op("fixport_test_checked::safe_sqrt", mutates_args=())
def safe_sqrt(x: torch.Tensor) -> torch.Tensor:
    if (x < 0).any():
        raise ValueError("safe_sqrt takes no negative values")
    return x.sqrt()
''')
    sample = _sample(path, (torch.rand(4),))
    made = rewritten_implementation("fixport_test_checked::safe_sqrt.default", sample)
    assert not isinstance(made, str) and made is not None, made
    assert "torch._check(torch.logical_not((x < 0).any()).item()" in made.source
    assert "+    torch._check(" in made.diff and "-    if (x < 0).any():" in made.diff
