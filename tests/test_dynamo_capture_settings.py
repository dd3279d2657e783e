"""torch's capture settings as fix candidates (issue 33): a model the dynamo exporter cannot
export with grad enabled, and exports (matching torch) under torch.no_grad(), is fixed by
`fix --auto` choosing that setting; the project and the fix script keep it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixport.core.project.capture_settings import CAPTURE_SETTINGS, NO_GRAD
from fixport.core.project.export_options import ExportOptions
from fixport.core.project.project import load_project
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.errors import ExportError

# SAM's windowed vision attention, small: a relative-position bias computed from the queries goes
# into scaled_dot_product_attention, whose output is reshaped after a permute. With grad enabled,
# torch.onnx's decomposition of the captured program turns that reshape into a view of a tensor
# whose strides do not allow it ("Cannot view a tensor ..."); under torch.no_grad() it exports.
WINDOW_ATTENTION = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"opset": 18, "fix_tolerance": 1e-5}


class WindowAttention(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.rel = nn.Parameter(torch.randn(64, dim // heads))

    def forward(self, x):
        b, h, w, c = x.shape
        qkv = self.qkv(x).reshape(b, h * w, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, b * self.heads, h * w, -1).unbind(0)
        bias = (q @ self.rel.T).reshape(b, self.heads, h * w, h * w)
        q, k, v = (t.view(b, self.heads, h * w, -1) for t in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        out = out.view(b, self.heads, h, w, -1).permute(0, 2, 3, 1, 4).reshape(b, h, w, -1)
        return self.proj(out)


def build():
    torch.manual_seed(0)
    return WindowAttention().eval(), (torch.randn(1, 8, 8, 32),)
'''
DYNAMO = {"exporter": "dynamo"}


@pytest.mark.slow
def test_fix_auto_chooses_no_grad_where_only_it_exports(worker, model_file) -> None:
    path = model_file("window_attention.py", WINDOW_ATTENTION)
    model = ModelRequest(str(path))
    before = worker.run(AnalyzeRequest(model, options=DYNAMO))
    assert [(p.kind, p.reason) for p in before.unsupported] == [("aten::view.default", "export_failed")]

    fixed = worker.run(AutoFixRequest(model, dict(DYNAMO)))
    assert fixed.capture_settings == [NO_GRAD], fixed.rejected
    assert fixed.after.unsupported == [] and fixed.after.options.capture_settings == [NO_GRAD]
    assert fixed.after.output_max_abs is not None and fixed.after.output_max_abs <= 1e-5

    compared = worker.run(CompareRequest(model, {**DYNAMO, "capture_settings": [NO_GRAD]}))
    assert compared.outputs and all(output.passed for output in compared.outputs)

    # the window's Fix all and `fix --auto` set the option from the same result, by the same rule
    from fixport.core.session.fix_all import plan_from

    plan = plan_from(ExporterRun.from_auto_fix(fixed), [])
    assert plan.capture_settings == [NO_GRAD] and plan.changes_anything
    assert fixed.option_edits(DYNAMO, pin_opset=False) == {"capture_settings": [NO_GRAD]}
    assert [(o.label, o.how) for o in plan.outcomes] == [("aten::view.default", "capture setting no_grad")]
    assert "captured with no_grad" in plan.summary()
    # the Log names what the setting changed, as it shows a code change's diff
    assert "capture setting no_grad: the whole export under torch.no_grad()" in "\n".join(plan.notes), plan.notes


@pytest.mark.slow
def test_core_aten_decompositions_first_export_it_too(worker, model_file) -> None:
    """Each setting is honoured by the export itself: torch's core ATen table, grad still on."""
    path = model_file("window_attention.py", WINDOW_ATTENTION)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), options={**DYNAMO, "capture_settings": ["core_aten"]}))
    assert result.unsupported == [] and result.output_max_abs is not None and result.output_max_abs <= 1e-5


@pytest.mark.slow  # the other capture-setting tests stay fast
def test_a_model_that_exports_as_it_is_gets_no_setting(worker, model_file) -> None:
    """Settings are tried only for what templates cannot fix: a clean model is left alone."""
    clean = WINDOW_ATTENTION.replace(", attn_mask=bias", "")
    fixed = worker.run(AutoFixRequest(ModelRequest(str(model_file("plain_attention.py", clean))), dict(DYNAMO)))
    assert fixed.before.unsupported == [] and fixed.capture_settings == []


@pytest.mark.slow
def test_cli_fix_keeps_the_setting_in_the_project_and_the_fix_script(cli, model_file, tmp_path: Path) -> None:
    path = model_file("window_attention.py", WINDOW_ATTENTION)
    project = tmp_path / "attention.fixport.json"
    fixed = cli("fix", str(path), "--exporter", "dynamo", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "captured with the setting no_grad" in fixed.stdout
    assert load_project(project).export_options["capture_settings"] == [NO_GRAD]

    script = tmp_path / "attention_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False)
    assert ran.returncode == 0 and output.exists(), ran.stderr[-3000:]  # the script checks it against torch


def test_an_unknown_capture_setting_is_refused_by_name() -> None:
    with pytest.raises(ExportError, match="Unknown capture setting 'grad_off'"):
        ExportOptions(exporter="dynamo", capture_settings=["grad_off"]).validate()
    ExportOptions(exporter="dynamo", capture_settings=list(CAPTURE_SETTINGS)).validate()
