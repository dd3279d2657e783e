"""Issue 46, item 2: a dim the dynamo capture specialised, answered from torch.export's own
suggested fixes (the capture setting suggested_dims): the declared dims become Dims with the
range or relation torch suggests, verified at the declared other sizes inside it; a size outside
is not the export's (check and the fix script say so); a suggestion that makes a dim static is refused."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fixport.core.exporters.dynamo.script_part import suggested_dynamic_shapes
from fixport.core.project.capture_settings import SUGGESTED_DIMS
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

# A size guard the capture resolves at the example (len 8 > 6): torch.export keeps the program for
# len >= 7, which the ONNX file does not check, so at len 5 it computes the other branch's numbers.
GUARDED = textwrap.dedent('''
    import torch

    FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo", "input_names": ["x"],
                       "dynamic_axes": {"x": {0: "batch", 1: "len"}}}}


    class Norm(torch.nn.Module):
        def forward(self, x):
            n = x.shape[1]
            if n > 6:
                return torch.nn.functional.layer_norm(x, (n,))
            return x


    def build():
        torch.manual_seed(0)
        return Norm().eval(), (torch.randn(2, 8),)
''')


class _Pair(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class _GuardedForTest(torch.nn.Module):
    def forward(self, x):
        n = x.shape[1]
        return torch.nn.functional.layer_norm(x, (n,)) if n > 6 else x


class _FixedView(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], 2, 4)


@pytest.mark.slow
def test_torchs_suggested_fixes_give_ranges_and_relations_and_never_a_static_dim() -> None:
    x = torch.randn(2, 8)
    (ranged,) = suggested_dynamic_shapes(_GuardedForTest(), (x,), {}, ({0: "batch", 1: "len"},))
    assert (ranged[1].__name__, ranged[1].min) == ("len", 7)
    first, second = suggested_dynamic_shapes(_Pair(), (x, x.clone()), {}, ({1: "len_x"}, {1: "len_y"}))
    assert first[1].__name__ == second[1].__name__ == "len_x"  # len_y = len_x, as torch suggests
    with pytest.raises(ValueError, match="make len static"):
        suggested_dynamic_shapes(_FixedView(), (x,), {}, ({0: "batch", 1: "len"},))


@pytest.mark.slow
def test_fix_auto_declares_the_range_torch_suggests_and_the_fix_script_keeps_it(worker, cli, tmp_path: Path) -> None:
    model = tmp_path / "norm.py"
    model.write_text(GUARDED, encoding="utf-8")
    before = worker.run(AnalyzeRequest(ModelRequest(str(model))))
    assert [p.reason for p in before.unsupported] == [ProblemReason.SHAPE_SPECIALISED], before.unsupported

    result = worker.run(AutoFixRequest(ModelRequest(str(model))))
    assert result.capture_settings == [SUGGESTED_DIMS] and result.after.unsupported == [], result.rejected
    notes = " ".join(result.after.notes)
    assert "Also checked at other sizes: batch=3, len=12." in notes  # verified inside the range
    assert "Not checked at batch=1, len=5" in notes and "x.size()[1] >= 7" in notes  # outside it, said so

    project, script = tmp_path / "norm.fixport.json", tmp_path / "fix.py"
    assert cli("fix", str(model), "--auto", "-o", str(project)).returncode == 0
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    run = subprocess.run([sys.executable, str(script), "-o", str(tmp_path / "out.onnx")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checked at batch=3, len=12 (x=3x12): max abs diff" in run.stdout
    assert "not checked at batch=1, len=5 (x=1x5): outside the sizes the export declares" in run.stdout
