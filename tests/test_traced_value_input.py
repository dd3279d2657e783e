"""Issue 46: an input whose values the trace bakes in, kept an input. A super-resolution net reads
its upscale factor with ``float(scale)``, so the TorchScript export holds for the example factor
only; `fix --auto` traces the resize as a generated autograd.Function whose symbolic passes the
runtime scale to Resize (the tutorials' fix, made without editing the model), and the value check
then finds the export right at another scale. The project and the fix script keep it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.checks.value_check import other_values, value_label
from fixport.core.exporters.choice import exporter_for
from fixport.core.project.project import load_project
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import FAMILY_TRACED_VALUE_INPUT
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
from fixport.symbolics.synthesis.runtime_scale import RUNTIME_SCALE_ID

SUPER_RESOLUTION = '''
import torch
import torch.nn.functional as F

FIXPORT_EXAMPLE = {"opset": 17}


class SuperResolution(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, x, scale):
        x = F.interpolate(x, scale_factor=float(scale), mode="bicubic", align_corners=False)
        return self.conv2(torch.relu(self.conv1(x)))


def build():
    torch.manual_seed(0)
    return SuperResolution().eval(), (torch.randn(1, 3, 12, 12), torch.tensor(3.0))
'''
SCALE_LINE = "super_resolution.py:15"


def _baked(kind: str) -> UnsupportedNode:
    return UnsupportedNode(kind, "n1", ProblemReason.BAKED_INPUT, "Input scale is not an input", "", SCALE_LINE)


def test_a_baked_scale_gets_only_the_function_that_keeps_it_an_input() -> None:
    exporter = exporter_for("torchscript")
    problem = _baked("aten::upsample_bicubic2d")
    assert exporter.can_fix(problem) and not exporter.can_fix(_baked("aten::view"))
    (candidate,) = exporter.fix_candidates(problem, 17, exporter.profile.template_library(), False)
    assert candidate.family == FAMILY_TRACED_VALUE_INPUT and candidate.mapping.template_id == RUNTIME_SCALE_ID
    assert SCALE_LINE in candidate.why and "RuntimeScaleResize" in candidate.why
    assert RUNTIME_SCALE_ID in [o.template_id for o in exporter.generated_offers("aten::upsample_bicubic2d", 17)]


def test_a_scale_is_tried_at_a_plausible_other_value_first() -> None:
    other, how = next(other_values(torch.tensor(3.0)))
    assert other.item() == 4.0 and value_label("scale", other, how) == "scale=4.0"


@pytest.mark.slow
def test_fix_auto_keeps_the_scale_an_input_and_the_value_check_passes(worker, model_file) -> None:
    model = ModelRequest(str(model_file("super_resolution.py", SUPER_RESOLUTION)))
    fixed = worker.run(AutoFixRequest(model, {}))
    assert [(p.kind, p.reason, p.source) for p in fixed.before.unsupported] == [
        ("aten::upsample_bicubic2d", "baked_input", SCALE_LINE)]
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_TRACED_VALUE_INPUT and choice.max_abs is not None and choice.max_abs < 1e-4
    assert fixed.after.onnx_graph is not None and "scale" in fixed.after.onnx_graph.inputs
    assert f"Input scale: its values are read at {SCALE_LINE}; the export also matched torch at scale=4.0." \
        in fixed.after.notes, fixed.after.notes
    assert any(w.startswith(f"TracedValueKept at {SCALE_LINE}") for w in fixed.after.warnings), fixed.after.warnings

    from fixport.core.session.fix_all import plan_from

    # the window's Fix all: its Log says what the fix made of the node
    plan = plan_from(ExporterRun.from_auto_fix(fixed), [])
    assert any("traced as RuntimeScaleResize" in note for note in plan.notes), plan.notes


@pytest.mark.slow
def test_the_project_and_the_fix_script_keep_the_scale_an_input(cli, model_file, tmp_path: Path) -> None:
    path = model_file("super_resolution.py", SUPER_RESOLUTION)
    project = tmp_path / "sr.fixport.json"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [m.template_id for m in load_project(project).mappings] == [RUNTIME_SCALE_ID]
    script = tmp_path / "sr_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    without_fixport = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False, env=without_fixport)
    assert ran.returncode == 0 and output.exists(), ran.stdout[-2000:] + ran.stderr[-3000:]
    session = ort.InferenceSession(str(output))
    assert [i.name for i in session.get_inputs()] == ["x", "scale"]
    namespace: dict = {}
    exec(compile(SUPER_RESOLUTION, str(path), "exec"), namespace)  # noqa: S102 -- the test's own model
    model, (x, _) = namespace["build"]()
    for scale in (2.0, 4.0):  # the runtime scale, not the traced 3.0
        got = session.run(None, {"x": x.numpy(), "scale": np.array(scale, dtype=np.float32)})[0]
        with torch.no_grad():
            expected = model(x, torch.tensor(scale)).numpy()
        assert got.shape == expected.shape and np.abs(got - expected).max() < 1e-4
