"""Fixes written once for both exporters: a template under ``@fix`` is an ONNX function the
dynamo exporter registers as it is and the TorchScript exporter re-emits through the torch_lib
bridge; both libraries offer it, both searches choose it, and the TorchScript fix script carries it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.library import TemplateLibrary
from tests.conftest import slow_but_one

SHARED = [t for t in TemplateLibrary(user_dir="/nonexistent").all() if t.family == "onnx_function"]

MEDIAN_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 17}


class Median(torch.nn.Module):
    def forward(self, x):
        values, indices = x.median(dim=1)
        return values, indices


def build():
    torch.manual_seed(0)
    return Median().eval(), (torch.randn(3, 7, 5),)
'''


@pytest.mark.parametrize("template", SHARED, ids=[t.id for t in SHARED])
def test_both_libraries_offer_each_shared_template_for_its_ops(template) -> None:
    assert template.family == "onnx_function"
    for fit in template.fits:  # dynamo names the overload, TorchScript only the op
        assert template.id in [o.template_id for o in dynamo_library(user_dir="/nonexistent").templates_for(fit, 18)]
        torchscript_kind = fit.partition(".")[0]
        offers = TemplateLibrary(user_dir="/nonexistent").templates_for(torchscript_kind, 17)
        assert template.id in [o.template_id for o in offers], torchscript_kind


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_both_exporters_fix_median_with_the_same_template(worker, tmp_path: Path, exporter: str) -> None:
    model = tmp_path / "median.py"
    model.write_text(MEDIAN_MODEL, encoding="utf-8")
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), {"exporter": exporter}))
    assert result.after.unsupported == [], result.rejected
    assert [c.template_id for c in result.choices] == ["onnx_function.median_dim_topk"]


@pytest.mark.slow
def test_the_torchscript_fix_script_carries_the_shared_function(cli, tmp_path: Path) -> None:
    model = tmp_path / "median.py"
    model.write_text(MEDIAN_MODEL, encoding="utf-8")
    project, script = tmp_path / "median.fixport.json", tmp_path / "fix_median.py"
    assert cli("fix", "--auto", str(model), "-o", str(project)).returncode == 0
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    assert "carry_module('fixport.symbolics.onnx_functions'" in script.read_text(encoding="utf-8")
    ran = subprocess.run([sys.executable, str(script), "-o", str(tmp_path / "fixed.onnx")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "checked at x=3x7x5 (traced): max abs diff 0" in ran.stdout


@pytest.mark.slow
def test_both_exporters_fix_a_mixtral_moe_with_the_same_grouped_mm(worker) -> None:
    """TorchScript traces transformers' experts to aten::_grouped_mm; dynamo keeps its
    grouped_mm_fallback custom op (a Python loop over offs.tolist()): one template fixes both."""
    from fixport.examples import corpus

    model = str(Path(corpus.__file__).parent / "mixtral_moe.py")
    chosen = {}
    for exporter in ("torchscript", "dynamo"):
        result = worker.run(AutoFixRequest(ModelRequest(model), {"exporter": exporter}))
        assert result.after.unsupported == [], (exporter, result.rejected)
        chosen[exporter] = {c.kind: c.template_id for c in result.choices}
    assert chosen["torchscript"]["aten::_grouped_mm"] == "onnx_function.grouped_mm"
    assert chosen["dynamo"] == {"transformers::grouped_mm_fallback.default": "onnx_function.grouped_mm"}


MASKED_SELECT_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Select(torch.nn.Module):
    def forward(self, x, mask):
        return torch.masked_select(x * 2, mask)


def build():
    torch.manual_seed(0)
    return Select().eval(), (torch.rand(3, 4), torch.rand(4) > 0.5)
'''


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_masked_select_as_compress_holds_for_masks_of_every_count(worker, tmp_path: Path, exporter: str) -> None:
    """The output's length is the mask's count: one ONNX function, registered by either exporter,
    runs at masks it was not exported with (dynamo: chosen by fix --auto; TorchScript, which has
    its own symbolic, takes it as a fix)."""
    import numpy as np
    import onnxruntime as ort
    import torch

    from fixport.core.project.project import FixMapping
    from fixport.core.records.requests import AnalyzeRequest

    model, output = tmp_path / "select.py", tmp_path / "select.onnx"
    model.write_text(MASKED_SELECT_MODEL, encoding="utf-8")
    if exporter == "dynamo":
        result = worker.run(AutoFixRequest(ModelRequest(str(model)), {"exporter": exporter}, output=str(output)))
        assert result.after.unsupported == [], result.rejected
        assert [c.template_id for c in result.choices] == ["onnx_function.masked_select_compress"]
    else:
        source = TemplateLibrary(user_dir="/nonexistent").get("onnx_function.masked_select_compress").source
        mapping = FixMapping(target_kind="aten::masked_select", template_id="onnx_function.masked_select_compress",
                             source=source)
        result = worker.run(AnalyzeRequest(ModelRequest(str(model)), {"exporter": exporter}, [mapping],
                                           output=str(output)))
        assert result.unsupported == []
    import onnx

    assert "Compress" in [node.op_type for node in onnx.load(str(output)).graph.node]
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    for mask in (torch.tensor([True, False, True, True]), torch.zeros(4, dtype=torch.bool)):
        x = torch.rand(3, 4)
        (actual,) = session.run(None, {session.get_inputs()[0].name: x.numpy(),
                                       session.get_inputs()[1].name: mask.numpy()})
        np.testing.assert_allclose(actual, torch.masked_select(x * 2, mask).numpy())
