"""The fix script checks what it wrote: ONNX Runtime against torch at the example inputs and at the
other sizes of the declared dynamic axes, made as Fixport's `check` makes them; a size the export
baked fails the script (exit 1) naming the shape."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fixport.core.checks.shape_check import generalisation_shapes
from fixport.core.fixing.fix_script import write_fix_script
from fixport.core.foundation import script as common
from fixport.core.loaders.loading import load_model
from fixport.core.project.export_options import resolve_export_options
from fixport.core.project.inputs import InputOptions
from fixport.core.project.project import Project
from tests.test_declared_shapes import BAKED_LENGTH_MODEL

TAGGER_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 17}


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.proj = torch.nn.Linear(4, 3)

    def forward(self, ids, mask):
        return self.proj(self.embed(ids)) * mask.unsqueeze(-1)


def build():
    torch.manual_seed(0)
    return Tagger().eval(), (torch.randint(0, 10, (2, 8)), torch.rand(2, 8))
'''
# Both inputs share batch and len: they move together, and the ids stay valid token ids.
TAGGER_OPTIONS = {"input_names": ["ids", "mask"],
                  "dynamic_axes": {"ids": {0: "batch", 1: "len"}, "mask": {0: "batch", 1: "len"}}}


def _script(tmp_path: Path, source: str, options: dict) -> tuple[Path, str]:
    model = tmp_path / "model.py"
    model.write_text(source, encoding="utf-8")
    script = write_fix_script(Project(model_path=str(model), export_options=options), tmp_path / "fix.py",
                              "out.onnx")
    return script, script.read_text(encoding="utf-8")


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], cwd=script.parent, capture_output=True, text=True,
                          timeout=300)


def test_the_script_checks_the_same_other_sizes_as_fixport(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(TAGGER_MODEL, encoding="utf-8")
    settings = common.ScriptSettings(model_path=str(model), trust=False, input_specs=[], input_file=None, seed=0,
                                     opset=None, default_opset=17, output="out.onnx", export_options=TAGGER_OPTIONS,
                                     custom_opsets={})
    job, _ = common.open_export_job(settings, [], str(tmp_path / "out.onnx"))
    (traced, *others) = common.shapes_to_check(job)
    assert traced[0] == "ids=2x8, mask=2x8 (traced)"
    loaded = load_model(model, InputOptions())
    fixport = generalisation_shapes(loaded, resolve_export_options(loaded.settings, TAGGER_OPTIONS))
    assert [label.split(" (")[0] for label, _ in others] == [s.label for s in fixport] == [
        "batch=3, len=12", "batch=1, len=5"]
    for (_, ours), theirs in zip(others, fixport):
        assert all(torch.equal(a, b) for a, b in zip(ours, theirs.inputs))  # the same values, not only shapes


@pytest.mark.slow  # the script in a new process per exporter; the declared-shapes checks themselves are fast tests
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_model_that_generalises_passes_at_every_declared_size(exporter: str, tmp_path: Path) -> None:
    script, text = _script(tmp_path, TAGGER_MODEL, {"exporter": exporter, **TAGGER_OPTIONS})
    assert f"EXPORT_OPTIONS = {TAGGER_OPTIONS!r}" in text
    ran = _run(script, "-o", "tagger.onnx")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = [line for line in ran.stdout.splitlines() if line.startswith("checked at ")]
    assert [line.split(": ")[0] for line in lines] == [
        "checked at ids=2x8, mask=2x8 (traced)", "checked at batch=3, len=12 (ids=3x12, mask=3x12)",
        "checked at batch=1, len=5 (ids=1x5, mask=1x5)"], ran.stdout
    assert all(": max abs diff " in line for line in lines)


@pytest.mark.slow
def test_a_size_the_trace_baked_fails_the_script_naming_the_shape(tmp_path: Path) -> None:
    script, text = _script(tmp_path, BAKED_LENGTH_MODEL, {})  # the dynamic axes are the model file's own
    assert "EXPORT_OPTIONS = {}\n" in text and "#   dynamic_axes = {'x': {0: 'batch', 1: 'len'}}" in text
    ran = _run(script, "-o", "baked.onnx")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "checked at x=2x8 (traced): max abs diff 0" in ran.stdout
    assert ("checked at batch=3, len=12 (x=3x12): MISMATCH out: shape differs: torch [3, 6], ONNX [3, 4]"
            in ran.stdout), ran.stdout
    assert "does not match torch at batch=3, len=12 (x=3x12); batch=1, len=5 (x=1x5)" in ran.stderr
    assert (tmp_path / "baked.onnx").is_file()  # written all the same

    unchecked = _run(script, "-o", "baked.onnx", "--no-check")
    assert unchecked.returncode == 0 and "checked at" not in unchecked.stdout, unchecked.stdout + unchecked.stderr
