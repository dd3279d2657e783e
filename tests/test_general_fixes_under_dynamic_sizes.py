"""Fixes that must hold at every declared size: with dynamic height and width, fix --auto chooses
fixes that compute their sizes in the graph, and the file it writes matches torch at other sizes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest

POOLED_MODEL = '''
import torch

FIXPORT_EXAMPLE = {{"opset": 17, "export_options": {{"input_names": ["image"],
                                                     "dynamic_axes": {{"image": {{2: "height", 3: "width"}}}}}}}}


class Pooled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.{pool}((7, 7))

    def forward(self, image):
        return self.pool(self.conv(image))


def build():
    torch.manual_seed(0)
    return Pooled().eval(), (torch.randn(1, 3, 30, 30),)
'''


def _matches_torch_at_other_sizes(model_path: Path, onnx_path: Path) -> None:
    """The fixed file, in plain ONNX Runtime, against the model in torch at sizes it was not traced at."""
    namespace: dict = {}
    exec(compile(model_path.read_text(encoding="utf-8"), str(model_path), "exec"), namespace)
    model, _ = namespace["build"]()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for height, width in ((45, 45), (23, 30), (64, 17)):
        image = torch.randn(1, 3, height, width)
        with torch.no_grad():
            expected = model(image)
        got = session.run(None, {"image": image.numpy()})[0]
        assert got.shape == tuple(expected.shape)
        assert np.abs(got - expected.numpy()).max() < 1e-4, (height, width)


@pytest.mark.parametrize(("pool", "template"), [
    ("AdaptiveAvgPool2d", "decompose.adaptive_avg_pool2d_cumsum"),  # hand-written for any size
    pytest.param("AdaptiveMaxPool2d", "synthesized.decomposition.adaptive_max_pool2d",  # replayed with symbolic sizes
                 marks=pytest.mark.slow),
])
def test_adaptive_pooling_is_fixed_for_every_declared_size(worker, tmp_path: Path, pool: str, template: str) -> None:
    model_path = tmp_path / "pooled.py"
    model_path.write_text(POOLED_MODEL.format(pool=pool), encoding="utf-8")
    output = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model_path)), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    assert [c.template_id for c in result.choices] == [template]
    _matches_torch_at_other_sizes(model_path, output)


def test_fix_auto_holds_fixes_to_the_shapes_the_user_gives_and_the_project_keeps_them(cli, tmp_path: Path) -> None:
    import json

    model_path = tmp_path / "pooled.py"
    model_path.write_text(POOLED_MODEL.format(pool="AdaptiveAvgPool2d"), encoding="utf-8")
    project = tmp_path / "pooled.fixport.json"
    # At opset 10 only fixes built for the traced sizes are left: the shape given refuses them all.
    fixed = cli("fix", "--auto", str(model_path), "--opset", "10", "--keep-opset", "--shapes",
                "image=1x3x64x17", "-o", str(project), "--json")
    report = json.loads(fixed.stdout)
    assert [f["family"] for f in report["fixed"]] == ["custom_domain"], report["fixed"]  # the last resort
    assert any("image=1x3x64x17" in r["reason"] and r["line"].endswith(r["reason"]) for r in report["rejected"]), \
        report["rejected"]
    assert json.loads(project.read_text(encoding="utf-8"))["shapes_to_check"] == ["image=1x3x64x17"]

    fixed = cli("fix", "--auto", str(model_path), "--shapes", "image=1x3x64x17", "-o", str(project))
    assert fixed.returncode == 0 and "decompose.adaptive_avg_pool2d_cumsum" in fixed.stdout, fixed.stdout
    compared = json.loads(cli("compare", str(model_path), "--project", str(project), "--runs", "1", "--json").stdout)
    assert compared["pass"] and compared["runs"] == 2, compared
    assert any("image=1x3x64x17" in message for message in compared["messages"]), compared["messages"]


def test_a_replay_that_folds_the_sizes_is_refused_with_its_own_word(worker, tmp_path: Path) -> None:
    model_path = tmp_path / "median.py"
    model_path.write_text('''
import torch

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {0: "b", 2: "h"}}}}


class Median(torch.nn.Module):
    def forward(self, x):
        return x.median(dim=2).values


def build():
    torch.manual_seed(0)
    return Median().eval(), (torch.randn(2, 4, 8, 8),)
''', encoding="utf-8")
    result = worker.run(AutoFixRequest(ModelRequest(str(model_path))))
    replayed = [r for r in result.rejected if r.candidate.startswith("synthesized.decomposition.median")]
    assert replayed and "b=3, h=12" in replayed[0].reason, result.rejected
    # the replay's warning, with the refusal
    assert "(aten::median is replayed at the traced sizes" in replayed[0].reason
