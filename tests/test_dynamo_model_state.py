"""torch.export runs forward() on fake tensors: what forward() caches on its modules while captured
(a detection head's anchors, made from the feature sizes and kept with their shape, as YOLO's
heads do) must not outlive the capture, or torch's next run and the next capture get fake tensors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest

CACHED_ANCHORS = '''
import torch
from torch import nn


class Head(nn.Module):
    anchors = torch.empty(0)  # class defaults, replaced on the instance by forward()
    shape = None

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        if self.shape != y.shape:
            h, w = y.shape[2:]
            rows, cols = torch.meshgrid(torch.arange(h, dtype=y.dtype), torch.arange(w, dtype=y.dtype),
                                        indexing="ij")
            self.anchors = torch.stack((cols, rows), -1).view(-1, 2).transpose(0, 1)
            self.shape = y.shape
        levels = torch.round(y * 10).to(torch.int16)
        return torch.square(levels).to(torch.float32).flatten(2) / 100.0 + self.anchors.sum(0)


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x)


def build():
    torch.manual_seed(0)
    return Detector().eval(), (torch.randn(1, 3, 4, 4),)
'''


@pytest.mark.filterwarnings("ignore:The tensor attribute self.head.anchors was assigned during export")
def test_capture_leaves_no_fake_tensor_on_the_model(model_file) -> None:
    from fixport.core.exporters.dynamo.exporter import capture
    from fixport.core.loaders.loading import load_model
    from fixport.core.project.export_options import ExportOptions

    loaded = load_model(model_file("detector.py", CACHED_ANCHORS))
    program, problems = capture(loaded, ExportOptions(opset=18, exporter="dynamo"))
    assert program is not None and problems == []
    head = loaded.module.head
    assert "anchors" not in vars(head) and "shape" not in vars(head)  # back to the class defaults
    output = loaded.module(*loaded.example_inputs)
    assert type(output) is torch.Tensor and type(head.anchors) is torch.Tensor
    output.detach().numpy()  # a fake tensor raises here


@pytest.mark.slow
def test_check_and_fix_auto_on_a_model_that_caches_tensors_in_forward(worker, model_file, tmp_path: Path) -> None:
    """Before: check compared torch's fake output ("a Fixport bug"), and fix --auto's re-export
    took the fake anchors for a constant and stopped translating."""
    path = model_file("detector.py", CACHED_ANCHORS)
    checked = worker.run(AnalyzeRequest(ModelRequest(str(path)), options={"exporter": "dynamo", "opset": 18}))
    assert [(p.kind, p.reason) for p in checked.unsupported] == [("aten::pow.Tensor_Scalar", "runtime_error")]
    output = tmp_path / "fixed.onnx"
    fixed = worker.run(AutoFixRequest(ModelRequest(str(path)), {"exporter": "dynamo", "opset": 18},
                                      output=str(output)))
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    from fixport.core.loaders.loading import load_model

    loaded = load_model(path)
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(actual, loaded.module(*loaded.example_inputs).numpy(), atol=1e-5)


@pytest.mark.slow
def test_the_fix_script_checks_a_model_that_caches_tensors_in_forward(cli, model_file, tmp_path: Path) -> None:
    """The fix script exports with torch.onnx.export and then runs torch to check: before, torch ran
    on the fake anchors the export left and the script could not check ('torch itself fails')."""
    path = model_file("detector.py", CACHED_ANCHORS)
    project, script = tmp_path / "detector.fixport.json", tmp_path / "detector_export.py"
    fixed = cli("fix", str(path), "--exporter", "dynamo", "--opset", "18", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    ran = subprocess.run([sys.executable, str(script), "-o", str(tmp_path / "detector.onnx")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0 and "checked at x=1x3x4x4 (traced): max abs diff" in ran.stdout, ran.stdout + ran.stderr
