"""Fixes that must hold at every declared size: with dynamic height and width, fix --auto chooses
fixes that compute their sizes in the graph, and the file it writes matches torch at other sizes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.model.requests import AutoFixRequest
from fixport.core.model.results import ModelRequest

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
    ("AdaptiveMaxPool2d", "synthesized.decomposition.adaptive_max_pool2d"),  # replayed with symbolic sizes
])
def test_adaptive_pooling_is_fixed_for_every_declared_size(worker, tmp_path: Path, pool: str, template: str) -> None:
    model_path = tmp_path / "pooled.py"
    model_path.write_text(POOLED_MODEL.format(pool=pool), encoding="utf-8")
    output = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model_path)), output=str(output)))
    assert result.after.unsupported == [], result.rejected
    assert [c.template_id for c in result.choices] == [template]
    _matches_torch_at_other_sizes(model_path, output)
