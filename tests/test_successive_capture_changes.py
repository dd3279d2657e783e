"""Issue 46: capture changes for the lines torch.export stops at one after another.

torchvision's batched NMS returns early with ``if boxes.numel() > n and not _is_tracing():``; each
operand of the ``and`` that reads a size goes under ``guard_or_false`` (Python asks each for a bool).
The path it then takes for the general size (the coordinate trick) stops at a line the example's
own path never reached (``if boxes.numel() == 0:``), so draft_export cannot list it up front: the
capture is tried again with the changes so far, and the next line's change is added, until the
model captures or no change fits. One fix makes them all; it is verified at other sizes and values
and reproduced by the fix script without Fixport."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixport.core.exporters.capture_change_fix import CODE_CHANGE_TEMPLATE_ID
from fixport.core.exporters.capture_changes import propose_change
from fixport.core.records.fix_choices import FAMILY_CODE_CHANGE
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason

GUARDED = "torch.fx.experimental.symbolic_shapes.guard_or_false"

# A library's plain functions, as torchvision's batched NMS writes them: two ways to the same
# result, picked by size. The example's boxes are more than 8 numbers, so its own path is the first
# return; the general path reaches `trick`.
LIBRARY = '''
import torch


def tracing():
    return torch.jit.is_tracing()


def pick(boxes, scores):
    if boxes.numel() > 8 and not tracing():
        return torch.stack([column * scores for column in boxes.unbind(1)], 1) / (boxes.max() + 1.0)
    else:
        return trick(boxes, scores)


def trick(boxes, scores):
    if boxes.numel() == 0:
        return torch.zeros((0, 4))
    top = boxes.max()
    return boxes * scores[:, None] / (top + 1.0)
'''

MODEL = '''
import torch
from torch import nn

import seqops

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        boxes = self.linear(x)
        scores = boxes.sum(1)
        keep = scores > 0
        return seqops.pick(boxes[keep], scores[keep])


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(16, 4),)
'''


def test_each_operand_of_an_and_that_reads_a_size_takes_the_general_path() -> None:
    source = LIBRARY.lstrip()
    change = propose_change(source, 9, "4*u0 > 8")
    assert change is not None and (change.class_name, change.method_name, change.start, change.end) == \
        ("", "pick", 9, 9)
    assert change.replacement == (f"    if {GUARDED}(boxes.numel() > 8) and not tracing():",)
    nested = "def f(x, y, flag):\n    if x.numel() > 3 and (y.numel() == 0 or flag):\n        return x\n    return y\n"
    (line,) = propose_change(nested, 2, "u0").replacement
    assert line == f"    if {GUARDED}(x.numel() > 3) and ({GUARDED}(y.numel() == 0) or flag):"
    compile(line.strip() + "\n    pass\n", "<changed>", "exec")  # the brackets keep the `or` an operand
    on_values = "def f(x):\n    if x.max() > 0 and x.numel() > 3:\n        return x\n    return -x\n"
    (line,) = propose_change(on_values, 2, "u0").replacement  # a value's operand is left as it is
    assert line == f"    if x.max() > 0 and {GUARDED}(x.numel() > 3):"


def _write(tmp_path: Path) -> Path:
    (tmp_path / "seqops.py").write_text(LIBRARY.lstrip(), encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text(MODEL.lstrip(), encoding="utf-8")
    return model


@pytest.mark.slow
def test_fix_auto_changes_the_line_the_capture_stops_at_next_too(worker, tmp_path: Path) -> None:
    model = _write(tmp_path)
    before = worker.run(AnalyzeRequest(ModelRequest(str(model))))
    failing = [p for p in before.unsupported if p.reason == ProblemReason.CAPTURE_FAILED]
    assert [p.source for p in failing] == ["seqops.py:9"], before.unsupported  # trick's line is not met yet
    assert "1 of them for the lines it stopped at next" in failing[0].message, failing[0].message

    result = worker.run(AutoFixRequest(ModelRequest(str(model))))
    assert result.after.unsupported == [], (result.after.unsupported, result.rejected)
    (choice,) = result.choices
    assert choice.family == FAMILY_CODE_CHANGE and "pick (seqops.py)" in choice.why and "trick" in choice.why
    source = result.mappings[0].source
    assert f"# +    if {GUARDED}(boxes.numel() > 8) and not tracing():" in source, source
    assert f"# +    if {GUARDED}(boxes.numel() == 0):" in source, source
    assert "if boxes.numel() == 0:" in (tmp_path / "seqops.py").read_text(encoding="utf-8")  # the file stays
    # verified against the original code at other values of x (other numbers of boxes kept) too
    assert any(note.startswith("Input x: its values are read at") for note in result.after.notes), result.after.notes


@pytest.mark.slow
def test_the_fix_script_reproduces_the_successive_changes_without_fixport(cli, tmp_path: Path) -> None:
    model = _write(tmp_path)
    project = tmp_path / "model.fixport.json"
    fixed = cli("fix", str(model), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(project.read_text())["mappings"][0]["template_id"] == CODE_CHANGE_TEMPLATE_ID
    script = tmp_path / "fix.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    assert f"# +    if {GUARDED}(boxes.numel() == 0):" in script.read_text(encoding="utf-8")
    run = subprocess.run([sys.executable, str(script), "-o", str(tmp_path / "out.onnx")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "max abs diff" in run.stdout, run.stdout + run.stderr
