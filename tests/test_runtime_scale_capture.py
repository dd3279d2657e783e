"""Issue 46: the runtime upscale factor under torch.export. A net that reads its factor with
``float(scale)`` (or ``.item()``) stops torch.export; `fix --auto` changes those interpolate calls,
for the capture only, to ``fixport::runtime_scale_interpolate``, which keeps the factor a tensor
and exports to ONNX Resize with the scale read at run time. The export is checked at other sizes
and at other factors, and the fix script reproduces it without Fixport."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.capture_change_fix import CODE_CHANGE_TEMPLATE_ID
from fixport.core.exporters.capture_changes import RUNTIME_SCALE_OP, propose_change
from fixport.core.foundation import runtime_scale_op
from fixport.core.records.fix_choices import FAMILY_CODE_CHANGE
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

UPSCALER = textwrap.dedent('''
    import torch
    import torch.nn.functional as F
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 18, "export_options": {
        "exporter": "dynamo", "input_names": ["image", "factor"],
        "dynamic_axes": {"image": {2: "height", 3: "width"}}}}


    class Upscaler(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, padding=1)

        def forward(self, image, factor):
            up = F.interpolate(self.conv(image), scale_factor=factor.item(), mode="bilinear", align_corners=False)
            return up + nn.functional.interpolate(image, None, float(factor), "bicubic", False)


    def build():
        torch.manual_seed(0)
        return Upscaler().eval(), (torch.rand(1, 3, 10, 12), torch.tensor(2.0))
''')
FAILING_LINE = 17  # the first interpolate: torch.export stops there


def test_each_interpolate_of_the_function_keeps_its_factor_a_tensor() -> None:
    change = propose_change(UPSCALER, FAILING_LINE, "u0")
    assert change is not None and (change.start, change.end) == (17, 18)
    assert change.replacement == (
        f"        up = {RUNTIME_SCALE_OP}(self.conv(image), factor, 'bilinear', False)",
        f"        return up + {RUNTIME_SCALE_OP}(image, factor, 'bicubic', False)")


@pytest.mark.parametrize("call", [
    "F.interpolate(x, size=(4, 4), scale_factor=float(s))",  # a size given: not the factor's
    "F.interpolate(x, scale_factor=float(s), antialias=True)",  # no ONNX Resize does it
    "F.interpolate(x, scale_factor=2.0)",  # no value read: nothing to keep
    "F.interpolate(x, scale_factor=float(s), recompute_scale_factor=True)",
    "F.interpolate(x, scale_factor=float(s), mode='area')",  # no ONNX Resize mode
])
def test_interpolates_the_op_does_not_stand_for_are_left(call: str) -> None:
    source = f"import torch\n\n\ndef f(x, s):\n    return {call}\n"
    assert propose_change(source, 5, "u0") is None


def test_the_op_runs_interpolate_and_its_onnx_resize_reads_the_factor_at_run_time(tmp_path: Path) -> None:
    class Net(torch.nn.Module):
        def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            return runtime_scale_op.runtime_scale_interpolate(x, s, "bicubic", False) * 2

    x, s = torch.rand(1, 2, 6, 8), torch.tensor(2.0)
    torch.testing.assert_close(Net()(x, s), torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bicubic") * 2)
    path = tmp_path / "net.onnx"
    dims = {"x": {2: torch.export.Dim("h"), 3: torch.export.Dim("w")}, "s": None}
    torch.onnx.export(Net().eval(), (x, s), str(path), dynamo=True, dynamic_shapes=dims,
                      custom_translation_table=runtime_scale_op.translations())
    session = ort.InferenceSession(str(path))
    for shape, factor in (((1, 2, 6, 8), 2.0), ((1, 2, 9, 5), 3.0), ((1, 2, 8, 8), 1.5)):
        x, s = torch.rand(*shape), torch.tensor(factor)
        got = session.run(None, {"x": x.numpy(), "s": s.numpy()})[0]
        np.testing.assert_allclose(got, Net()(x, s).numpy(), atol=1e-5)


@pytest.mark.slow
def test_fix_auto_keeps_the_factor_an_input_checked_at_other_sizes_and_factors(worker, model_file) -> None:
    model = ModelRequest(str(model_file("upscaler.py", UPSCALER)))
    fixed = worker.run(AutoFixRequest(model, {}))
    assert [(p.reason, p.source) for p in fixed.before.unsupported] == [
        (ProblemReason.CAPTURE_FAILED, f"upscaler.py:{FAILING_LINE}")]
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_CODE_CHANGE and fixed.mappings[0].template_id == CODE_CHANGE_TEMPLATE_ID
    assert f"# +        return up + {RUNTIME_SCALE_OP}(image, factor, 'bicubic', False)" in fixed.mappings[0].source
    # the ONNX model ran at another factor too, against the original code
    assert any(note.startswith("Input factor: its values are read at") for note in fixed.after.notes), \
        fixed.after.notes


@pytest.mark.slow
def test_the_fix_script_exports_an_onnx_model_right_at_other_sizes_and_factors(cli, model_file,
                                                                              tmp_path: Path) -> None:
    model = model_file("upscaler.py", UPSCALER)
    project = tmp_path / "upscaler.fixport.json"
    fixed = cli("fix", str(model), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(project.read_text())["mappings"][0]["template_id"] == CODE_CHANGE_TEMPLATE_ID
    script, onnx_file = tmp_path / "fix.py", tmp_path / "out.onnx"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # no Fixport
    run = subprocess.run([sys.executable, str(script), "-o", str(onnx_file)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    sys.path.insert(0, str(model.parent))
    try:
        import upscaler
    finally:
        sys.path.remove(str(model.parent))
    net, _ = upscaler.build()
    session = ort.InferenceSession(str(onnx_file))
    for shape, factor in (((1, 3, 10, 12), 2.0), ((1, 3, 17, 9), 3.0), ((1, 3, 8, 8), 1.5)):
        image, scale = torch.rand(*shape), torch.tensor(factor)
        got = session.run(None, {"image": image.numpy(), "factor": scale.numpy()})[0]
        np.testing.assert_allclose(got, net(image, scale).detach().numpy(), atol=1e-4)
