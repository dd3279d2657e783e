"""Issue 46: a size check that only guards a truncation (EnCodec's ``if mask.shape[-1] <
values.shape[-1]: values = values[..., :mask.shape[-1]]``). The TorchScript trace records the branch
the traced length took, so the export is wrong at lengths that take the other one. The strategy
``traced_size_change`` drops the comparison (the cut is a no-op where the tensor is not longer) while
the model is traced; the other-size check finds the export right at other lengths, and the project
and the fix script keep the change."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.capture_change_fix import TRACED_CODE_CHANGE_TEMPLATE_ID
from fixport.core.exporters.traced_size_changes import propose_size_change
from fixport.core.project.project import load_project
from fixport.core.records.fix_choices import FAMILY_TRACED_SIZE_CHANGE
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

PAD_THEN_CUT = '''
import torch
import torch.nn.functional as F

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {2: "length"}}}}


class PadThenCut(torch.nn.Module):
    """A codec's pattern: pad the length up to a multiple of 4, convolve, cut back to the input's length."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(1, 2, 3, padding=1)

    def forward(self, x, mask=None):
        n = x.shape[-1]
        y = self.conv(F.pad(x, (0, (4 - n % 4) % 4)))
        if mask is None and n < y.shape[-1]:
            y = y[..., :n]
        return y


def build():
    torch.manual_seed(0)
    return PadThenCut().eval(), (torch.randn(1, 1, 600),)
'''
GUARD_LINE = "pad_then_cut.py:18"


def test_the_comparison_goes_and_the_cut_stays() -> None:
    change = propose_size_change(PAD_THEN_CUT, 18)
    assert change is not None and change.replacement == ("        if mask is None:",)
    assert (change.start, change.end, change.class_name, change.method_name) == (18, 18, "PadThenCut", "forward")
    alone = "def f(x, n):\n    if x.size(1) > n:\n        x = x[:, :n]\n    return x\n"
    assert propose_size_change(alone, 2).replacement == ("    x = x[:, :n]",)  # the whole if goes


@pytest.mark.parametrize("source", [
    "def f(x, n):\n    if n > x.shape[-1]:\n        x = x[..., :n]\n    return x\n",  # cuts where it is shorter
    "def f(x, n):\n    if n < x.shape[0]:\n        x = x[..., :n]\n    return x\n",  # another dim than the cut
    "def f(x, n):\n    if n < x.shape[-1]:\n        x = x[..., :n] * 2\n    return x\n",  # more than a cut
    "def f(x, y, n):\n    if n < x.shape[-1]:\n        y = x[..., :n]\n    return y\n",  # another name
    "def f(x, n):\n    if n < x.shape[-1]:\n        x = x[..., :n]\n    else:\n        x = x * 2\n    return x\n",
])
def test_a_comparison_guarding_more_than_a_no_op_cut_stays(source: str) -> None:
    assert propose_size_change(source, 2) is None


@pytest.mark.slow
def test_fix_auto_drops_the_guard_and_the_other_lengths_match(worker, model_file) -> None:
    model = ModelRequest(str(model_file("pad_then_cut.py", PAD_THEN_CUT)))
    checked = worker.run(AnalyzeRequest(model, {}))
    specialised = [p for p in checked.unsupported if p.reason == ProblemReason.SHAPE_SPECIALISED]
    assert specialised and GUARD_LINE in specialised[0].message, [p.message for p in checked.unsupported]
    assert "+        if mask is None:" in specialised[0].code_change

    fixed = worker.run(AutoFixRequest(model, {}))
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_TRACED_SIZE_CHANGE and choice.max_abs is not None and choice.max_abs < 1e-4
    assert fixed.after.other_sizes_checked, fixed.after.notes
    assert not [w for w in fixed.after.warnings if GUARD_LINE in w]  # the trace no longer takes a branch there


@pytest.mark.slow
def test_the_fix_script_drops_the_guard_without_fixport(cli, model_file, tmp_path: Path) -> None:
    path = model_file("pad_then_cut.py", PAD_THEN_CUT)
    project = tmp_path / "cut.fixport.json"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [m.template_id for m in load_project(project).mappings] == [TRACED_CODE_CHANGE_TEMPLATE_ID]
    script = tmp_path / "cut_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    without_fixport = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False, env=without_fixport)
    assert ran.returncode == 0 and output.exists(), ran.stdout[-2000:] + ran.stderr[-3000:]
    session = ort.InferenceSession(str(output))
    namespace: dict = {}
    exec(compile(PAD_THEN_CUT, str(path), "exec"), namespace)  # noqa: S102 -- the test's own model
    model, _ = namespace["build"]()
    for length in (599, 601, 1000):  # lengths whose padding the traced one (600) did not need
        x = torch.randn(1, 1, length)
        got = session.run(None, {"x": x.numpy()})[0]
        with torch.no_grad():
            expected = model(x).numpy()
        assert got.shape == expected.shape and np.abs(got - expected).max() < 1e-4, length
