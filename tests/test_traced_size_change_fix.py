"""Issue 46: `fix --auto` fixes a size the TorchScript trace folds into a constant. An EnCodec-like
model pads its length up to a multiple of the stride with ``math.ceil(n / stride)``: the trace
warns at that line and the export holds at the traced length only (``shape_specialised``). The
strategy ``traced_size_change`` runs that line as integer arithmetic while the model is traced,
and the other-size check finds the export right at other lengths; the project and the fix script
keep it."""
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
from fixport.core.exporters.choice import exporter_for
from fixport.core.project.project import FixMapping, load_project
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import FAMILY_TRACED_SIZE_CHANGE
from fixport.core.records.fix_strategies import FIX_STRATEGIES, TRACED_SIZE_CHANGE, TRACED_VALUE_INPUT
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

ENCODEC_LIKE = '''
import math

import torch
import torch.nn.functional as F

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {2: "length"}}}}


class PaddedConv(torch.nn.Module):
    """EnCodec's pattern: the length padded up to a multiple of the stride, computed in Python."""

    def __init__(self):
        super().__init__()
        self.stride = 4
        self.conv = torch.nn.Conv1d(1, 2, 4, stride=self.stride)

    def forward(self, x):
        n = x.shape[-1]
        extra = math.ceil(n / self.stride) * self.stride - n
        return self.conv(F.pad(x, (0, extra)))


def build():
    torch.manual_seed(0)
    return PaddedConv().eval(), (torch.randn(1, 1, 599),)
'''
PAD_LINE = "padded_conv.py:20"


def test_the_strategy_is_tried_for_torchscript_only_and_only_with_a_change() -> None:
    assert FIX_STRATEGIES.index(TRACED_SIZE_CHANGE) == FIX_STRATEGIES.index(TRACED_VALUE_INPUT) + 1
    torchscript, dynamo = exporter_for("torchscript"), exporter_for("dynamo")
    assert TRACED_SIZE_CHANGE in torchscript.fix_strategies and TRACED_SIZE_CHANGE not in dynamo.fix_strategies
    bare = UnsupportedNode("aten::_convolution", "n1", ProblemReason.SHAPE_SPECIALISED, "wrong at x=1000", "",
                           PAD_LINE)
    assert not torchscript.can_fix(bare)
    assert torchscript.fix_candidates(bare, 17, torchscript.profile.template_library(), False) == []


@pytest.mark.slow
def test_fix_auto_keeps_the_length_traced_and_the_other_sizes_match(worker, model_file) -> None:
    model = ModelRequest(str(model_file("padded_conv.py", ENCODEC_LIKE)))
    checked = worker.run(AnalyzeRequest(model, {}))
    specialised = [p for p in checked.unsupported if p.reason == ProblemReason.SHAPE_SPECIALISED]
    assert specialised and PAD_LINE in specialised[0].message, [p.message for p in checked.unsupported]
    assert "(n + self.stride - 1) // self.stride" in specialised[0].code_change  # the Inspector's proposed change

    fixed = worker.run(AutoFixRequest(model, {}))
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_TRACED_SIZE_CHANGE and choice.max_abs is not None and choice.max_abs < 1e-4
    assert fixed.after.other_sizes_checked, fixed.after.notes  # and it matched there
    assert not [w for w in fixed.after.warnings if PAD_LINE in w]  # the trace no longer folds it

    from fixport.core.session.fix_all import plan_from

    # the window's Fix all: its Log shows the change as a diff, and the outcome names the kind of fix
    plan = plan_from(ExporterRun.from_auto_fix(fixed), [])
    assert any("+        extra = (n + self.stride - 1) // self.stride" in note for note in plan.notes), plan.notes
    assert any(FAMILY_TRACED_SIZE_CHANGE in outcome.how for outcome in plan.outcomes), plan.outcomes


@pytest.mark.slow
def test_a_change_right_only_at_the_traced_size_is_rejected(worker, model_file) -> None:
    model = ModelRequest(str(model_file("padded_conv.py", ENCODEC_LIKE)))
    checked = worker.run(AnalyzeRequest(model, {}))
    fix = next(p.code_change_fix for p in checked.unsupported if p.code_change_fix)
    # the traced length's padding as a constant: right at 599, wrong at every length that pads otherwise
    pinned = fix.replace("n = x.shape[-1]", "n = 599").replace(
        "extra = (n + self.stride - 1) // self.stride * self.stride - n", "extra = 1")
    assert pinned != fix
    mapping = FixMapping(target_kind="aten::_convolution", template_id=TRACED_CODE_CHANGE_TEMPLATE_ID, source=pinned)
    trial = worker.run(AnalyzeRequest(model, {}, [mapping]))
    assert any(p.reason == ProblemReason.SHAPE_SPECIALISED for p in trial.unsupported), trial.unsupported


@pytest.mark.slow
def test_the_project_and_the_fix_script_keep_the_change(cli, model_file, tmp_path: Path) -> None:
    path = model_file("padded_conv.py", ENCODEC_LIKE)
    project = tmp_path / "padded.fixport.json"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [m.template_id for m in load_project(project).mappings] == [TRACED_CODE_CHANGE_TEMPLATE_ID]
    again = cli("check", str(path), "--project", str(project))  # the project reloaded, exported again with it
    assert again.returncode == 0 and "shape_specialised" not in again.stdout, again.stdout + again.stderr
    script = tmp_path / "padded_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    without_fixport = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False, env=without_fixport)
    assert ran.returncode == 0 and output.exists(), ran.stdout[-2000:] + ran.stderr[-3000:]
    session = ort.InferenceSession(str(output))
    namespace: dict = {}
    exec(compile(ENCODEC_LIKE, str(path), "exec"), namespace)  # noqa: S102 -- the test's own model
    model, _ = namespace["build"]()
    for length in (599, 601, 1000):
        x = torch.randn(1, 1, length)
        got = session.run(None, {"x": x.numpy()})[0]
        with torch.no_grad():
            expected = model(x).numpy()
        assert got.shape == expected.shape and np.abs(got - expected).max() < 1e-4, length


# A library's module (a stand-in for one the user does not edit): it reads a size with int().
HALVING_LIBRARY = '''
import torch


class Halves(torch.nn.Module):
    def forward(self, x):
        b = x.shape[0]
        half = int(x.size(1)) // 2
        return x.view(b, half, -1).sum(-1)
'''
USES_THE_LIBRARY = '''
import torch

import halvinglib

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {0: "b", 1: "n"}}}}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.halves = halvinglib.Halves()

    def forward(self, x):
        return self.halves(x * 2.0)


def build():
    return Model().eval(), (torch.randn(2, 8, 3),)
'''


def test_int_of_a_size_read_becomes_the_traced_read() -> None:
    from fixport.core.exporters.traced_size_changes import propose_size_change

    change = propose_size_change(HALVING_LIBRARY, 8)
    assert change is not None and change.replacement == ("        half = x.size(1) // 2",)
    assert propose_size_change("def f(x):\n    return int(x.size(1) / 3)\n", 2).replacement == (
        "    return x.size(1) // 3",)  # a division still becomes floor division, not a dropped int()


@pytest.mark.slow
def test_fix_auto_changes_a_library_line_for_the_trace_only(worker, model_file, tmp_path: Path) -> None:
    library = tmp_path / "halvinglib.py"
    library.write_text(HALVING_LIBRARY, encoding="utf-8")
    model = ModelRequest(str(model_file("uses_halving.py", USES_THE_LIBRARY)))
    fixed = worker.run(AutoFixRequest(model, {}))
    assert [p.reason for p in fixed.before.unsupported] == [ProblemReason.SHAPE_SPECIALISED]
    assert "halvinglib.py:8" in fixed.before.unsupported[0].message
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_TRACED_SIZE_CHANGE and "Halves.forward (halvinglib.py)" in choice.why
    assert library.read_text(encoding="utf-8") == HALVING_LIBRARY  # the library's file stays as it is


@pytest.mark.slow
def test_fix_all_in_the_window_logs_the_diff_and_the_template_dock_shows_the_fix(qtbot, window, model_file) -> None:
    from PySide6.QtCore import Qt

    from tests.test_fix_all import toolbar_button
    from tests.test_gui_flow import run_job

    model = model_file("padded_conv.py", ENCODEC_LIKE)
    run_job(qtbot, window, lambda: window.open_path(model))
    run_job(qtbot, window, lambda: qtbot.mouseClick(toolbar_button(window, "fix_all"), Qt.MouseButton.LeftButton))
    assert window.workbench.analysis.unsupported == [], window.log.contents()
    assert "+        extra = (n + self.stride - 1) // self.stride * self.stride - n" in window.log.contents()
    (mapping,) = window.workbench.project.mappings
    assert mapping.template_id == TRACED_CODE_CHANGE_TEMPLATE_ID
    row = window.problems.tree.topLevelItem(0)
    assert "traced_size_change: torchscript.traced_size_change" in row.text(0), row.text(0)
    window.problems._on_item_clicked(row)  # no node stands for it: the Template dock shows its source
    assert "fixed by <b>torchscript.traced_size_change</b>" in window.template.heading.text()
    assert "extra = (n + self.stride - 1) // self.stride * self.stride - n" in window.template.editor.source()
