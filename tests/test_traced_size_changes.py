"""The size-keeping change for a TorchScript trace that folds a size into a constant (issue 46)."""
from __future__ import annotations

import importlib.util
import io
import re
import types
import warnings
from pathlib import Path

import pytest

from fixport.core.exporters.capture_change_fix import changed_method
from fixport.core.exporters.capture_changes import ChangedSource
from fixport.core.exporters.traced_size_changes import propose_size_change

ENCODEC_LIKE = '''import math

import torch
import torch.nn.functional as F


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
'''


def test_ceil_of_a_division_becomes_floor_division() -> None:
    change = propose_size_change(ENCODEC_LIKE, 17)
    assert change is not None
    assert change.replacement == ("        extra = (n + self.stride - 1) // self.stride * self.stride - n",)
    assert (change.class_name, change.method_name, change.start, change.end) == ("PaddedConv", "forward", 17, 17)


def test_a_line_without_rounding_gets_no_change() -> None:
    assert propose_size_change(ENCODEC_LIKE, 16) is None
    assert propose_size_change(ENCODEC_LIKE, 18) is None


DEPTH_HEAD_LIKE = '''import torch
import torch.nn.functional as F


class Head(torch.nn.Module):
    """Depth Anything's pattern: the output size computed from the patch grid, frozen by int()."""

    patch_size = 14

    def forward(self, x, patch_height, patch_width):
        return F.interpolate(x, (int(patch_height * self.patch_size), int(patch_width * self.patch_size)),
                             mode="bilinear", align_corners=True)

    def scaled(self, x):
        return F.interpolate(x, (int(x.shape[-2] * 0.5), int(x.shape[-1] / 2)))
'''


def test_int_of_integer_arithmetic_is_dropped_and_a_float_product_is_left() -> None:
    change = propose_size_change(DEPTH_HEAD_LIKE, 11)
    assert change is not None
    assert change.replacement == ("        return F.interpolate(x, (patch_height * self.patch_size, patch_width * "
                                  "self.patch_size), mode='bilinear', align_corners=True)",)
    scaled = propose_size_change(DEPTH_HEAD_LIKE, 15)  # int(h * 0.5) stays; int(w / 2) becomes w // 2
    assert scaled is not None and scaled.replacement == (
        "        return F.interpolate(x, (int(x.shape[-2] * 0.5), x.shape[-1] // 2))",)


def _export(model, length: int) -> tuple[bytes, list[str]]:
    import torch

    buffer = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.onnx.export(model, (torch.randn(1, 1, length),), buffer, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {2: "length"}})
    return buffer.getvalue(), [f"{w.filename}:{w.lineno}" for w in caught if w.category.__name__ == "TracerWarning"]


def _matches(onnx_bytes: bytes, model, length: int) -> bool:
    import numpy as np
    import onnxruntime as ort
    import torch

    x = torch.randn(1, 1, length)
    got = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    with torch.no_grad():
        want = model(x).numpy()
    return got.shape == want.shape and bool(np.allclose(got, want, atol=1e-5))


@pytest.mark.slow
def test_the_changed_method_keeps_the_length_dynamic(tmp_path: Path) -> None:
    path = tmp_path / "padded_conv.py"
    path.write_text(ENCODEC_LIKE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("padded_conv", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.PaddedConv().eval()

    plain, warned = _export(model, 599)
    assert _matches(plain, model, 599) and not _matches(plain, model, 1000)  # only the traced length holds
    line = next(int(re.sub(r".*:", "", w)) for w in warned if w.startswith(str(path)))
    change = propose_size_change(ENCODEC_LIKE, line)
    assert change is not None
    text = changed_method(ChangedSource(path.name, ENCODEC_LIKE, [change]), change, "changed_1")
    namespace = dict(vars(module))
    exec(compile(text, str(path), "exec"), namespace)  # noqa: S102 - the generated method, as a template runs it

    model.forward = types.MethodType(namespace["changed_1"], model)  # for the export only
    fixed, warned_again = _export(model, 599)
    del model.forward
    assert not [w for w in warned_again if w.startswith(str(path))]
    for length in (599, 601, 1000):
        assert _matches(fixed, model, length), length
