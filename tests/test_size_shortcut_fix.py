"""Issue 46: a shortcut written for one size, which torch.export turns into the only size the export
holds for. A ViT-like embedding returns its position table as it is when the image has the
training size (``if h == w and tokens.shape[1] == self.pos.shape[1]: return self.pos``, as
transformers' DINOv2 does). With height and width declared dynamic, torch.export pins them to take
the shortcut (and ``int()`` of the output size, the head's, pins them too) and the ONNX file fails
at other sizes (``shape_specialised``). The capture's guards name the lines; ``fix --auto`` asks each
comparison of the shortcut with ``statically_known_true`` and drops the ``int()`` while the model is
captured, so the interpolating path is exported; the project and the fix script keep it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.capture_change_fix import CODE_CHANGE_TEMPLATE_ID
from fixport.core.exporters.size_shortcuts import guard_places, propose_shortcut_change
from fixport.core.project.project import load_project
from fixport.core.records.fix_choices import FAMILY_CODE_CHANGE
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

SHORTCUT = '''
import torch
import torch.nn.functional as F
from torch import nn

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo", "input_names": ["x"],
                                                   "dynamic_axes": {"x": {2: "height", 3: "width"}}}}


class Patches(nn.Module):
    """Patch tokens plus a 2x2 position table, interpolated to the patch grid unless it already fits."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 8, 14, stride=14)
        self.cls = nn.Parameter(torch.randn(1, 1, 8))
        self.pos = nn.Parameter(torch.randn(1, 5, 8))  # the class token's, then a 2x2 grid's

    def forward(self, x):
        h, w = x.shape[-2:]
        tokens = torch.cat((self.cls, self.proj(x).flatten(2).transpose(1, 2)), dim=1)
        tokens = tokens + self.position(tokens, h, w)
        grid = tokens[:, 1:].transpose(1, 2).reshape(1, 8, h // 14, w // 14)
        return F.interpolate(grid, size=(int(h // 14 * 14), int(w // 14 * 14)), mode="bilinear", align_corners=True)

    def position(self, tokens, h, w):
        if h == w and tokens.shape[1] == self.pos.shape[1]:
            return self.pos
        grid = self.pos[:, 1:].reshape(1, 2, 2, 8).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(h // 14, w // 14), mode="bicubic", align_corners=False)
        return torch.cat((self.pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, 8)), dim=1)


def build():
    torch.manual_seed(0)
    return Patches().eval(), (torch.randn(1, 3, 28, 28),)
'''
IF_LINE = next(n for n, line in enumerate(SHORTCUT.splitlines(), 1) if "if h == w and" in line)
SHORTCUT_LINE = f"patches.py:{IF_LINE}"
CERTAIN = "torch.fx.experimental.symbolic_shapes.statically_known_true"


def test_each_comparison_of_the_shortcut_is_asked_without_a_guard() -> None:
    change = propose_shortcut_change(SHORTCUT, IF_LINE)
    assert change is not None and (change.class_name, change.method_name) == ("Patches", "position")
    assert change.replacement == (f"        if {CERTAIN}(h == w) and {CERTAIN}(tokens.shape[1] == self.pos.shape[1]):",)
    assert propose_shortcut_change(SHORTCUT, IF_LINE + 2) is None  # no `if`
    no_return = "def f(x, n):\n    if x.shape[0] == n:\n        x = x * 2\n    return x\n"
    assert propose_shortcut_change(no_return, 2) is None  # not a shortcut: its body does not return
    assert guard_places(["opset 18", f"SizeGuard at {SHORTCUT_LINE}: Eq(s1, s0)"]) == [SHORTCUT_LINE]


@pytest.mark.slow
def test_fix_auto_captures_the_general_path_and_other_sizes_match(worker, model_file) -> None:
    model = ModelRequest(str(model_file("patches.py", SHORTCUT)))
    checked = worker.run(AnalyzeRequest(model, {}))
    assert any(w.startswith(f"SizeGuard at {SHORTCUT_LINE}") for w in checked.warnings), checked.warnings
    specialised = [p for p in checked.unsupported if p.reason == ProblemReason.SHAPE_SPECIALISED]
    assert specialised and f"{CERTAIN}(h == w)" in specialised[0].code_change, checked.unsupported

    fixed = worker.run(AutoFixRequest(model, {}))
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_CODE_CHANGE and choice.max_abs is not None and choice.max_abs < 1e-4
    assert fixed.after.other_sizes_checked, fixed.after.notes  # and it matched there
    assert not [w for w in fixed.after.warnings if w.startswith("SizeGuard at")]  # nothing pinned any more


@pytest.mark.slow
def test_the_fix_script_captures_the_general_path_without_fixport(cli, model_file, tmp_path: Path) -> None:
    path = model_file("patches.py", SHORTCUT)
    project = tmp_path / "patches.fixport.json"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [m.template_id for m in load_project(project).mappings] == [CODE_CHANGE_TEMPLATE_ID]
    script = tmp_path / "patches_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    without_fixport = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, check=False, env=without_fixport)
    assert ran.returncode == 0 and output.exists(), ran.stdout[-2000:] + ran.stderr[-3000:]
    session = ort.InferenceSession(str(output))
    namespace: dict = {}
    exec(compile(SHORTCUT, str(path), "exec"), namespace)  # noqa: S102 -- the test's own model
    model, _ = namespace["build"]()
    for height, width in ((28, 28), (42, 56), (14, 14), (70, 42)):  # the shortcut's size, and sizes it does not fit
        x = torch.randn(1, 3, height, width)
        got = session.run(None, {"x": x.numpy()})[0]
        with torch.no_grad():
            expected = model(x).numpy()
        assert got.shape == expected.shape and np.abs(got - expected).max() < 1e-4, (height, width)
