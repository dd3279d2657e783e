"""Issue 46: sizes computed with tensor ops on 0-d integer buffers stay symbolic while captured.

transformers' EnCodec pads each conv to whole frames with ``torch.ceil`` on tensors made of the
input's length and 0-d ``persistent=False`` buffers, loops ``range(0, length, length)`` over one
chunk, and cuts the output back to the input's length only where it is longer. The model here is
written for the test in the same way (not EnCodec). ``fix --auto`` chooses the capture setting
``size_scalars`` (the capture keeps the length symbolic) and the change at the cut (a guard that
holds at some lengths between others it fails at); the export is checked at other lengths and
values, kept in the project and reproduced by the fix script."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fixport.core.exporters.dynamo.specialising_guards import gapped_guard_warnings
from fixport.core.foundation.size_scalars import Ratio, SizeScalars, size_range, sizes_kept_symbolic
from fixport.core.project.capture_settings import SIZE_SCALARS
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest

FRAMED = textwrap.dedent('''
    import torch
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo", "input_names": ["audio"],
                                                       "dynamic_axes": {"audio": {2: "samples"}}}}


    class FramedConv(nn.Module):
        """A strided conv padded to whole frames, its sizes kept as 0-d integer buffers."""

        def __init__(self, channels, kernel_size, stride):
            super().__init__()
            self.conv = nn.Conv1d(channels, channels, kernel_size, stride)
            self.stride = nn.Buffer(torch.tensor(stride), persistent=False)
            self.kernel_size = nn.Buffer(torch.tensor(kernel_size), persistent=False)
            self.padding_total = nn.Buffer(torch.tensor(kernel_size - stride), persistent=False)

        def extra_padding(self, x):
            length = x.shape[-1]
            frames = (length - self.kernel_size + self.padding_total) / self.stride + 1
            frames = torch.ceil(frames).to(torch.int64) - 1
            return frames * self.stride + self.kernel_size - self.padding_total - length

        def forward(self, x):
            extra = self.extra_padding(x)
            right = self.padding_total // 2
            left = self.padding_total - right
            return self.conv(nn.functional.pad(x, (left, right + extra)))


    class Codec(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = FramedConv(2, 4, 2)
            self.up = nn.ConvTranspose1d(2, 2, 2, 2)

        def forward(self, audio):
            length = audio.shape[-1]
            frames = []
            for offset in range(0, length, length):  # one chunk: the whole input
                frames.append(self.up(self.down(audio[..., offset:offset + length])))
            out = torch.cat(frames, dim=-1)
            if length < out.shape[-1]:
                out = out[..., :length]
            return out


    def build():
        torch.manual_seed(0)
        return Codec().eval(), (torch.randn(1, 2, 40),)
''')


def _load(tmp_path: Path) -> tuple[Path, torch.nn.Module, tuple[torch.Tensor, ...]]:
    path = tmp_path / "framed.py"
    path.write_text(FRAMED, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"framed_{tmp_path.name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    model, args = module.build()
    return path, model, args


@pytest.mark.slow
def test_a_size_computed_with_tensor_ops_is_exact_and_read_as_a_symbolic_size(tmp_path: Path) -> None:
    _, model, args = _load(tmp_path)
    dims = ({2: torch.export.Dim.DYNAMIC},)
    with pytest.raises(Exception, match="data-dependent"):
        torch.export.export(model, args, dynamic_shapes=dims)
    with sizes_kept_symbolic(model):
        program = torch.export.export(model, args, dynamic_shapes=dims)
    assert "range" not in vars(sys.modules[type(model).__module__])  # set for the capture only
    for length in (40, 38, 64):  # even lengths: the cut the example skipped is a no-op there
        audio = torch.randn(1, 2, length)
        torch.testing.assert_close(program.module()(audio), model(audio))
    # the cut taken as at the example's (even) length: a guard no range of lengths says
    line = FRAMED.splitlines().index("        if length < out.shape[-1]:") + 1
    assert [w.split(": ")[0] for w in gapped_guard_warnings(program)] == [f"SizeGuard at framed.py:{line}"]


def test_fractions_stay_exact_until_made_whole_and_other_ops_are_not_followed() -> None:
    with SizeScalars(torch.nn.Identity()) as mode:
        seven = torch.tensor(7)
        half = seven / 2
        assert mode._known_value(half) == Ratio(7, 2)
        assert int(torch.ceil(half).to(torch.int64)) == 4 and int(half.to(torch.int64)) == 3
        assert mode._known_value(torch.sin(seven.float())) is None
        assert bool(seven > 6) and not bool(seven < 7)
    assert list(size_range(0, 10, 4)) == [0, 4, 8]  # plain numbers: Python's own range


@pytest.mark.slow
def test_fix_auto_keeps_the_length_dynamic_and_the_fix_script_reproduces_it(worker, cli, tmp_path: Path) -> None:
    path, _, _ = _load(tmp_path)
    result = worker.run(AutoFixRequest(ModelRequest(str(path))))
    assert result.after.unsupported == [], (result.after.unsupported, result.rejected)
    assert result.capture_settings == [SIZE_SCALARS], result.rejected
    sources = "\n".join(mapping.source for mapping in result.mappings)
    assert "if length < out.shape[-1]:" in sources  # the cut, unguarded for the capture (a diff)
    # checked at other lengths and values against the original code
    assert any("samples" in note or "values" in note for note in result.after.notes), result.after.notes

    project = tmp_path / "framed.fixport.json"
    fixed = cli("fix", str(path), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert SIZE_SCALARS in json.loads(project.read_text())["export_options"]["capture_settings"]
    script = tmp_path / "fix.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    out = tmp_path / "out.onnx"
    run = subprocess.run([sys.executable, str(script), "-o", str(out)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "max abs diff" in run.stdout, run.stdout + run.stderr

    import onnxruntime as ort

    session = ort.InferenceSession(str(out))
    _, model, _ = _load(tmp_path)
    for length in (41, 40, 57, 100):  # odd lengths take the cut the example did not
        audio = torch.randn(1, 2, length)
        (got,) = session.run(None, {"audio": audio.numpy()})
        torch.testing.assert_close(torch.from_numpy(got), model(audio).detach(), rtol=1e-4, atol=1e-5)
