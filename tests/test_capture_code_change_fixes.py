"""Issue 46, item 1: the code changes that answer a dynamo capture failure are fix candidates.

`fix --auto` tries the lines torch.export names changed mechanically (torch.where for a branch on
a value, torch._check for a check, .item() with torch._check for a size), in the model's own code
or in a library's, for the capture only; the fix is verified like every fix (ORT against the
original torch code at the traced shapes, other sizes, and other values: a change that holds for
the example values only is refused), kept in the project and reproduced by the fix script."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fixport.core.exporters.capture_change_fix import CODE_CHANGE_TEMPLATE_ID, code_change_template
from fixport.core.exporters.capture_changes import ChangedSource, propose_change
from fixport.core.exporters.template_compiler import compile_template_source
from fixport.core.foundation.changed_methods import methods_changed
from fixport.core.project.project import FixMapping
from fixport.core.records.fix_choices import FAMILY_CODE_CHANGE
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import DYNAMO_CODE_CHANGE_FAMILY, ProblemReason
from fixport.symbolics.library import parse_template_source

# A library's module (a stand-in for transformers or torchvision): the user cannot edit its lines.
LIBRARY = '''
import torch
from torch import nn


class Base(nn.Module):
    def forward(self, x):
        if x.max() > 0.5:
            x = x * 2.0
        return super().forward(x) if False else x


class Gate(Base):
    def extra(self):
        return 1
'''

# The model's own code: a branch, a check and a size read from data, then the library's gate.
MODEL = '''
import torch
from torch import nn

import fakelib

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.gate = fakelib.Gate()

    def forward(self, x):
        scores = self.linear(x)
        if (scores.abs() > 1000).any():
            raise ValueError("scores out of range")
        if scores.mean() > 0:
            scores = scores + 1.0
        else:
            scores = scores - 1.0
        count = int((scores > 0).sum())
        return self.gate(scores)[:, :count]


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(2, 8),)
'''


def _write(tmp_path: Path) -> Path:
    (tmp_path / "fakelib.py").write_text(LIBRARY.lstrip(), encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text(MODEL.lstrip(), encoding="utf-8")
    return model


def _gate_template() -> str:
    source = LIBRARY.lstrip()
    change = propose_change(source, 7, "u0")  # if x.max() > 0.5: in Base.forward
    assert change is not None and (change.class_name, change.method_name) == ("Base", "forward")
    template = code_change_template([ChangedSource("fakelib.py", source, [change])], ["torch.export::x"])
    assert template is not None
    return template


def test_the_changes_become_a_template_that_shows_the_diff_and_lists_each_changed_method() -> None:
    template = _gate_template()
    info = parse_template_source(template)
    assert (info.id, info.family) == (CODE_CHANGE_TEMPLATE_ID, DYNAMO_CODE_CHANGE_FAMILY)
    assert "# -        if x.max() > 0.5:" in template and "# +        x = torch.where(x.max() > 0.5, x * 2.0, x)" \
        in template
    assert "super(Base, self).forward(x)" in template  # it runs outside its class: super() spelled out
    ((class_name, file_name, method, function),) = compile_template_source(template, {}, "<test>")()
    assert (class_name, file_name, method, function.__name__) == ("Base", "fakelib.py", "forward", "changed_1")


def test_a_library_method_runs_changed_inside_the_block_only_and_the_class_stays(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    (tmp_path / "fakelib.py").write_text(LIBRARY.lstrip(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fakelib", raising=False)
    import fakelib

    model = torch.nn.Sequential(fakelib.Gate(), torch.nn.Identity())
    changed = compile_template_source(_gate_template(), {}, "<test>")()
    original = fakelib.Base.forward
    with methods_changed(model, changed):
        assert "forward" in model[0].__dict__ and fakelib.Base.forward is original
        exported = torch.export.export(model, (torch.randn(2, 3),))  # the branch on a value captures now
    assert "forward" not in model[0].__dict__
    for x in (torch.full((2, 3), 0.9), torch.full((2, 3), 0.1)):  # the branch taken, then not
        torch.testing.assert_close(exported.module()(x), model(x))
    with pytest.raises(LookupError, match="no part of the model runs Base.forward of fakelib.py"):
        with methods_changed(torch.nn.Sequential(torch.nn.Identity()), changed):
            pass


@pytest.mark.slow
def test_fix_auto_changes_the_models_lines_and_the_librarys_for_the_capture(worker, tmp_path: Path) -> None:
    model = _write(tmp_path)
    before = worker.run(AnalyzeRequest(ModelRequest(str(model))))
    failing = {p.source for p in before.unsupported if p.reason == ProblemReason.CAPTURE_FAILED}
    assert {"model.py:17", "model.py:19", "model.py:23", "fakelib.py:7"} <= failing, before.unsupported

    result = worker.run(AutoFixRequest(ModelRequest(str(model))))
    assert result.after.unsupported == [], (result.after.unsupported, result.rejected)
    (choice,) = result.choices
    assert choice.family == FAMILY_CODE_CHANGE and "Base.forward (fakelib.py)" in choice.why
    source = result.mappings[0].source
    for changed in ("torch._check(torch.logical_not((scores.abs() > 1000).any()).item()",
                    "scores = torch.where(scores.mean() > 0, scores + 1.0, scores - 1.0)",
                    "count = (scores > 0).sum().item()", "x = torch.where(x.max() > 0.5, x * 2.0, x)"):
        assert f"# +{' ' * 8}{changed}" in source, source
    assert "if x.max() > 0.5:" in (tmp_path / "fakelib.py").read_text(encoding="utf-8")  # the files stay
    # the ONNX model was run at other values of x too, against the original code
    assert any(note.startswith("Input x: its values are read at") for note in result.after.notes), result.after.notes


@pytest.mark.slow
def test_the_fix_script_reproduces_the_code_change_without_fixport(cli, tmp_path: Path) -> None:
    model = _write(tmp_path)
    project = tmp_path / "model.fixport.json"
    fixed = cli("fix", str(model), "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(project.read_text())["mappings"][0]["template_id"] == CODE_CHANGE_TEMPLATE_ID
    script = tmp_path / "fix.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    text = script.read_text(encoding="utf-8")
    assert "# +        count = (scores > 0).sum().item()" in text  # the change, shown as a diff
    run = subprocess.run([sys.executable, str(script), "-o", str(tmp_path / "out.onnx")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "max abs diff" in run.stdout, run.stdout + run.stderr


# forward() branches on a value: torch.export cannot capture it.
READS_THE_MAX = textwrap.dedent('''
    import torch
    from torch import nn

    FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


    class Scale(nn.Module):
        def forward(self, x):
            if x.sum() > 15.9:
                return x * 2
            return x - 1


    def build():
        return Scale().eval(), (torch.ones(2, 8),)
''')

# A code change (as a user might edit the fix) that keeps the branch the example takes (its sum is 16).
SPECIALISED = textwrap.dedent('''
    import torch

    TEMPLATE = {"id": "dynamo.capture_code_change", "title": "t", "description": "d.",
                "family": "dynamo_code_change", "fits": ["torch.export::data_dependent_error"], "min_opset": 18,
                "max_opset": None, "params": {}, "runs_in_onnxruntime": True, "custom_opsets": {}, "notes": ""}


    def changed_1(self, x):
        return x * 2


    def symbolic():
        return [("Scale", "scale.py", "forward", changed_1)]
''')


@pytest.mark.slow
def test_a_change_right_at_the_example_values_only_is_wrong_at_other_values(worker, tmp_path: Path) -> None:
    model = tmp_path / "scale.py"
    model.write_text(READS_THE_MAX, encoding="utf-8")
    before = worker.run(AnalyzeRequest(ModelRequest(str(model))))
    assert [p.reason for p in before.unsupported] == [ProblemReason.CAPTURE_FAILED], before.unsupported
    mapping = FixMapping(before.unsupported[0].kind, CODE_CHANGE_TEMPLATE_ID, SPECIALISED)
    result = worker.run(AnalyzeRequest(ModelRequest(str(model)), {}, [mapping]))
    assert [p.reason for p in result.unsupported] == [ProblemReason.BAKED_INPUT], result.unsupported
    assert "scale.py:10" in result.unsupported[0].message  # where forward() reads the values


# Lines no code change fits (a module-level function: no method to run changed for the capture).
CHECK_IN_A_FUNCTION = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


def finite(x):
    if torch.isnan(x).any():
        print("NaN in the scores")  # a call: no mechanical change (a raise becomes torch._check)
    return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return finite(self.linear(x)) * 2


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(2, 8),)
'''

BRANCH_IN_A_FUNCTION = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


def scaled(x):
    if x.sum() > 15.9:
        return x * 2
    return x - 1


class Model(nn.Module):
    def forward(self, x):
        return scaled(x) + 1


def build():
    return Model().eval(), (torch.ones(2, 8),)
'''


@pytest.mark.slow
def test_where_no_change_fits_draft_export_is_tried_and_kept_only_where_other_values_match(
        worker, tmp_path: Path) -> None:
    from fixport.core.project.capture_settings import DEFERRED_ASSERTS, DRAFT_EXPORT, SIZE_SCALARS

    check = tmp_path / "check.py"
    check.write_text(CHECK_IN_A_FUNCTION, encoding="utf-8")
    result = worker.run(AutoFixRequest(ModelRequest(str(check))))
    assert result.after.unsupported == [] and result.capture_settings == [DRAFT_EXPORT], result.rejected
    # tried first: no size is computed with tensor ops, and a guard stays a guard
    assert [r.candidate for r in result.rejected] == [SIZE_SCALARS, DEFERRED_ASSERTS]
    assert any(note.startswith("Input x: its values are read at check.py:9") for note in result.after.notes), \
        result.after.notes

    branch = tmp_path / "branch.py"  # draft_export takes the example's branch: wrong at other values
    branch.write_text(BRANCH_IN_A_FUNCTION, encoding="utf-8")
    refused = worker.run(AutoFixRequest(ModelRequest(str(branch))))
    assert refused.capture_settings == [] and refused.after.options.capture_settings == []
    (why,) = [r.reason for r in refused.rejected if r.candidate == DRAFT_EXPORT]
    assert why.startswith("the numbers differ from torch with it: Input x") and "example values only" in why


@pytest.mark.slow
def test_fix_all_in_the_window_logs_the_diff_and_the_row_shows_the_fix(qtbot, window, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    from tests.test_fix_all import toolbar_button
    from tests.test_gui_flow import run_job

    model = _write(tmp_path)
    run_job(qtbot, window, lambda: window.open_path(model))
    assert window.workbench.analysis.options.exporter == "dynamo"
    run_job(qtbot, window, lambda: qtbot.mouseClick(toolbar_button(window, "fix_all"), Qt.MouseButton.LeftButton))
    assert window.workbench.analysis.unsupported == [], window.log.contents()
    assert "+        x = torch.where(x.max() > 0.5, x * 2.0, x)" in window.log.contents()  # what it changed
    (mapping,) = window.workbench.project.mappings
    assert mapping.template_id == CODE_CHANGE_TEMPLATE_ID
    row = window.problems.tree.topLevelItem(0)
    assert "capture_code_change: dynamo.capture_code_change" in row.text(0), row.text(0)
    window.problems._on_item_clicked(row)  # no node stands for it: the Template dock shows its source
    assert "fixed by <b>dynamo.capture_code_change</b>" in window.template.heading.text()
    assert "count = (scores > 0).sum().item()" in window.template.editor.source()


# A library's plain functions (torchvision's batched NMS): an early return on a size read from data.
PLAIN_LIBRARY = '''
import torch


def pick(boxes, scores):
    if boxes.numel() > 4000:
        return boxes * scores[:, None]
    else:
        return trick(boxes, scores)


def trick(boxes, scores):
    if boxes.numel() == 0:
        return torch.zeros((0, 4))
    top = boxes.max()
    return boxes / (top + 1.0) * scores[:, None]
'''

PLAIN_MODEL = '''
import torch
from torch import nn

import plainops

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        boxes = self.linear(x)
        scores = boxes.sum(1)
        keep = scores > 0
        return plainops.pick(boxes[keep], scores[keep])


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(16, 4),)
'''


def test_an_early_return_on_a_size_in_a_plain_function_takes_the_general_path_for_the_capture(
        tmp_path: Path, monkeypatch) -> None:
    source = PLAIN_LIBRARY.lstrip()
    change = propose_change(source, 12, "Eq(4*u0, 0)")  # if boxes.numel() == 0: in trick
    assert change is not None and (change.class_name, change.method_name, change.start, change.end) == \
        ("", "trick", 12, 12)  # the `if` line alone: its body stays
    assert change.replacement == ("    if torch.fx.experimental.symbolic_shapes.guard_or_false(boxes.numel() == 0):",)
    on_a_value = "def f(x):\n    if x.max() > 0:\n        return x\n    return -x\n"
    assert propose_change(on_a_value, 2, "u0") is None  # a value, not a size: no general path to take
    template = code_change_template([ChangedSource("plainops.py", source, [change])], ["torch.export::x"])
    assert template is not None and "trick (plainops.py)" in template
    ((class_name, file_name, name, function),) = compile_template_source(template, {}, "<test>")()
    assert (class_name, file_name, name) == ("", "plainops.py", "trick")

    (tmp_path / "plainops.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plainops", raising=False)
    import plainops

    original = plainops.trick
    with methods_changed(torch.nn.Identity(), [(class_name, file_name, name, function)]):
        assert plainops.trick is not original and plainops.trick.__globals__ is vars(plainops)
        boxes = torch.rand(3, 4)
        torch.testing.assert_close(plainops.pick(boxes, torch.ones(3)), original(boxes, torch.ones(3)))
    assert plainops.trick is original


@pytest.mark.slow
def test_fix_auto_changes_a_librarys_plain_function_for_the_capture(worker, tmp_path: Path) -> None:
    (tmp_path / "plainops.py").write_text(PLAIN_LIBRARY.lstrip(), encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text(PLAIN_MODEL.lstrip(), encoding="utf-8")
    before = worker.run(AnalyzeRequest(ModelRequest(str(model))))
    assert "plainops.py:12" in {p.source for p in before.unsupported if p.reason == ProblemReason.CAPTURE_FAILED}

    result = worker.run(AutoFixRequest(ModelRequest(str(model))))
    assert result.after.unsupported == [], (result.after.unsupported, result.rejected)
    (choice,) = result.choices
    assert choice.family == FAMILY_CODE_CHANGE and "trick (plainops.py)" in choice.why
    assert "# +    if torch.fx.experimental.symbolic_shapes.guard_or_false(boxes.numel() == 0):" \
        in result.mappings[0].source
    assert any(note.startswith("Input x: its values are read at") for note in result.after.notes), result.after.notes
