"""Every shape an export declares: check runs the model at other sizes of its dynamic dims, names the
line where the trace baked a size, and fix --auto refuses fixes that only hold at the traced shapes."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fixport.core.checks.shape_check import generalisation_shapes
from fixport.core.loaders.loading import load_model
from fixport.core.project.export_options import resolve_export_options
from fixport.core.project.inputs import InputOptions
from fixport.core.records.fix_records import TrialStage
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path

ADAPTIVE_POOL_MODEL = '''
import torch

FIXPORT_EXAMPLE = {{"opset": 17, "export_options": {options}}}


class Pooled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d((7, 7))

    def forward(self, image):
        return self.pool(self.conv(image))


def build():
    torch.manual_seed(0)
    return Pooled().eval(), (torch.randn(1, 3, 30, 30),)
'''
DYNAMIC_HW = {"input_names": ["image"], "dynamic_axes": {"image": {2: "height", 3: "width"}}}

ANTIALIASED_RESIZE_MODEL = '''
import torch
import torch.nn.functional as F

FIXPORT_EXAMPLE = {{"opset": 17, "export_options": {options}}}


class Shrunk(torch.nn.Module):
    def forward(self, image):
        height, width = image.shape[-2:]
        return F.interpolate(image, size=(height // 2, width // 2), mode="bilinear", antialias=True)


def build():
    torch.manual_seed(0)
    return Shrunk().eval(), (torch.randn(1, 3, 30, 30),)
'''

BAKED_LENGTH_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch", 1: "len"}}}}


class FirstHalf(torch.nn.Module):
    def forward(self, x):
        n = int(x.shape[1])
        return x[:, : n // 2] * 2


def build():
    torch.manual_seed(0)
    return FirstHalf().eval(), (torch.randn(2, 8),)
'''


def _model(tmp_path: Path, source: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


def test_the_other_sizes_are_larger_and_smaller_and_dims_of_one_name_move_together(tmp_path: Path) -> None:
    path = _model(tmp_path, ADAPTIVE_POOL_MODEL.format(options=repr(DYNAMIC_HW)))
    loaded = load_model(path, InputOptions())
    options = resolve_export_options(loaded.settings, {})
    sets = generalisation_shapes(loaded, options)
    # odd sizes among them; height and width, equal in the example, also apart (a square-only graph fails there)
    assert [tuple(s.inputs[0].shape) for s in sets] == [(1, 3, 45, 45), (1, 3, 21, 21), (1, 3, 45, 30)]
    assert sets[0].label == "height=45, width=45"
    assert sets[2].label == "height=45, width=30 (height and width apart, equal in the example)"
    assert generalisation_shapes(loaded, resolve_export_options({}, {})) == []  # nothing declared: nothing else


def test_a_size_baked_by_int_is_flagged_at_the_node_with_the_line_that_baked_it(worker, tmp_path: Path) -> None:
    path = _model(tmp_path, BAKED_LENGTH_MODEL)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    (problem,) = result.unsupported
    assert problem.reason == "shape_specialised" and problem.kind == "aten::mul"
    assert problem.instance in result.source_graph.node_by_id
    assert "torch [3, 6], ONNX [3, 4]" in problem.message
    assert "model.py:9" in problem.message  # n = int(x.shape[1])
    assert any("batch=3, len=12" in note for note in result.notes)


@pytest.mark.slow
def test_the_dynamo_exporter_keeps_the_same_size_symbolic(worker, tmp_path: Path) -> None:
    path = _model(tmp_path, BAKED_LENGTH_MODEL)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), {"exporter": "dynamo"}))
    assert result.unsupported == []
    assert any("batch=3, len=12" in note for note in result.notes)


def test_every_way_of_baking_a_size_names_its_own_line(worker) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("baked_sizes")))))
    lines = {problem.source for problem in result.unsupported}
    assert {"baked_sizes.py:35", "baked_sizes.py:36", "baked_sizes.py:38", "baked_sizes.py:39",
            "baked_sizes.py:40"} <= lines, lines
    assert all(problem.reason == "shape_specialised" for problem in result.unsupported)


def test_a_real_model_that_generalises_stays_clean(worker) -> None:
    options = {"input_names": ["x"], "dynamic_axes": {"x": {0: "batch", 2: "height", 3: "width"}}}
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("resnet18_clean"))), options))
    assert result.unsupported == []
    assert any("batch=2, height=96, width=96" in note for note in result.notes)


@pytest.mark.slow
def test_fix_auto_refuses_a_fix_that_folds_the_traced_sizes(worker, tmp_path: Path) -> None:
    # Antialiased resizing to a size computed from the input's: ONNX Runtime's antialias is not
    # torch's, so every fix there is built for the traced sizes.
    dynamic = _model(tmp_path, ANTIALIASED_RESIZE_MODEL.format(options=repr(DYNAMIC_HW)), "dynamic.py")
    result = worker.run(AutoFixRequest(ModelRequest(str(dynamic))))
    assert not any(c.family in ("decomposition_replay", "static_materialisation") for c in result.choices)
    refused = [r for r in result.rejected if r.family == "static_materialisation"]
    assert refused and "height=45, width=45" in refused[0].reason, result.rejected
    assert "aten::_upsample_bilinear2d_aa" in result.no_template  # said so, not fixed wrongly
    # The node alone has static sizes: its fix passed there, and the one whole-model check caught it.
    assert any(r.stage == TrialStage.CONTRADICTED for r in result.rejected), result.rejected
    assert any("passed on the node alone but not in the model" in why for why in result.whole_model_why)

    static = _model(tmp_path, ANTIALIASED_RESIZE_MODEL.format(options="{}"), "static.py")
    fixed = worker.run(AutoFixRequest(ModelRequest(str(static))))
    assert fixed.after.unsupported == [] and fixed.choices  # at static shapes a folding fix is right


def test_the_other_sizes_use_valid_token_ids() -> None:
    from fixport.core.foundation.other_sizes import random_like

    ids = torch.randint(3, 9, (1, 8))
    other = random_like(ids, [2, 12], torch.Generator().manual_seed(0))
    assert other.shape == (2, 12) and other.dtype == ids.dtype and 3 <= int(other.min()) and int(other.max()) <= 8


def test_compare_runs_the_declared_sizes_too(worker, tmp_path: Path) -> None:
    from fixport.core.records.requests import CompareRequest

    path = _model(tmp_path, BAKED_LENGTH_MODEL)
    result = worker.run(CompareRequest(ModelRequest(str(path)), runs=1))
    assert not result.passed and result.runs == 3
    assert any("batch=3, len=12" in message for message in result.messages)
    assert "shape differs" in result.outputs[0].problem
    assert result.node_analysis is not None and result.node_analysis.run == 1  # node by node where it failed


def test_suggest_dynamic_names_the_dims_that_generalise_and_the_line_that_blocks_the_others(
        cli, tmp_path: Path) -> None:
    import json

    path = _model(tmp_path, BAKED_LENGTH_MODEL)
    shown = cli("check", str(path), "--suggest-dynamic")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "x[0] (traced 2)              can be dynamic" in shown.stdout
    assert "x[1] (traced 8)              blocked at model.py:9" in shown.stdout
    assert """--dynamic-axes '{"x": {"0": "x_0"}}'""" in shown.stdout
    verdicts = json.loads(cli("check", str(path), "--suggest-dynamic", "--json").stdout)["verdicts"]
    assert [(v["axis"], v["generalises"]) for v in verdicts] == [(0, True), (1, False)]


@pytest.mark.slow
def test_suggest_dynamic_cannot_tell_where_torch_refuses_other_sizes(worker) -> None:
    from fixport.core.records.requests import SuggestDynamicRequest

    verdicts = worker.run(SuggestDynamicRequest(ModelRequest(str(example_path("resnet18_clean")))))
    assert [v.generalises for v in verdicts] == [True, None, True, True]  # channels: the first conv needs 3
    assert "torch itself fails" in verdicts[1].why


def test_suggest_dynamic_in_the_window_reports_in_the_log(qtbot, window) -> None:
    from tests.test_gui_flow import open_example, run_job

    open_example(qtbot, window, "baked_sizes")
    run_job(qtbot, window, lambda: window.actions["suggest_dynamic"].trigger())
    contents = window.log.contents()
    assert "No input dim can be declared dynamic as the model stands." in contents, contents
    assert "x[1] (traced 8): blocked at baked_sizes.py:34" in contents


def test_shapes_the_user_gives_are_checked_instead_and_a_wrong_name_is_refused(cli, tmp_path: Path) -> None:
    import json

    path = _model(tmp_path, BAKED_LENGTH_MODEL)
    checked = cli("check", str(path), "--shapes", "x=4x20", "--json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    (problem,) = json.loads(checked.stdout)["unsupported"]
    assert problem["reason"] == "shape_specialised" and problem["message"].startswith("At x=4x20 (inputs 4x20)")
    refused = cli("check", str(path), "--shapes", "y=3")
    assert refused.returncode == 2 and "--shapes names y, but the model's inputs are x" in refused.stderr


FIX_AND_BAKE_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 12, "export_options": {"input_names": ["x"], "dynamic_axes": {"x": {1: "len"}}}}


class ThresholdThenHalf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = torch.nn.Threshold(0.1, 20.0)

    def forward(self, x):
        n = int(x.shape[1])
        return self.threshold(x)[:, : n // 2]


def build():
    torch.manual_seed(0)
    return ThresholdThenHalf().eval(), (torch.randn(2, 8),)
'''


def test_a_size_the_models_code_bakes_does_not_make_every_fix_fail(worker, tmp_path: Path) -> None:
    """Transformers' causal LMs under a dynamic batch: once a fix makes the model run, a size its own
    code baked shows up; that is the model's problem, listed, not a reason to refuse the fix."""
    path = _model(tmp_path, FIX_AND_BAKE_MODEL)
    result = worker.run(AutoFixRequest(ModelRequest(str(path))))
    assert [c.kind for c in result.choices][0] == "aten::threshold", result.rejected
    # the size it baked (n = int(x.shape[1]), model.py:13), once the model runs: the traced-size change
    # (issue 46) keeps it traced, so it is fixed too rather than left
    assert [(c.kind, c.family) for c in result.choices[1:]] == [("aten::slice", "traced_size_change")]
    assert result.after.unsupported == [], [p.message for p in result.after.unsupported]


FIXED_VIEW_MODEL = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo", "input_names": ["x"],
                                                   "dynamic_axes": {"x": {0: "batch", 1: "len"}}}}


class FixedView(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], 2, 4) * 2


def build():
    torch.manual_seed(0)
    return FixedView().eval(), (torch.randn(2, 8),)
'''


@pytest.mark.slow
def test_dynamo_names_the_dim_its_capture_could_not_keep_dynamic_and_the_line(worker, tmp_path: Path) -> None:
    path = _model(tmp_path, FIXED_VIEW_MODEL)
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    (problem,) = result.unsupported
    assert problem.reason == "capture_failed" and problem.kind == "torch.export::constraint_violation"
    assert problem.source == "model.py:10"
    assert "len (x[1])" in problem.message and "static shape of 8" in problem.message
    assert "batch" not in problem.message.split(":")[0]  # only the dim that does not hold


def test_the_compare_dock_switches_between_the_checked_shapes(qtbot, window) -> None:
    from tests.test_gui_flow import open_example, run_job

    open_example(qtbot, window, "baked_sizes")
    run_job(qtbot, window, window.actions["compare"].trigger)
    dock = window.compare
    labels = [dock.run_choice.itemText(i) for i in range(dock.run_choice.count())]
    assert labels == ["worst of all", "example inputs", "random, seed 1", "random, seed 2", "batch=3, length=12",
                      "batch=1, length=5"], labels
    assert dock.run_choice.isVisibleTo(window)
    dock.run_choice.setCurrentIndex(1)  # the traced shapes: every output passes
    assert all(dock.table.item(row, 9).text() == "pass" for row in range(dock.table.rowCount()))
    dock.run_choice.setCurrentIndex(4)
    assert dock.table.item(0, 1).text() == "3x6" and dock.table.item(0, 9).text().startswith("FAIL")


def test_the_template_dock_says_no_template_fixes_a_size_the_models_code_baked(qtbot, window) -> None:
    from tests.test_gui_flow import click_problem, open_example

    open_example(qtbot, window, "baked_sizes")
    click_problem(qtbot, window, 0)
    heading = window.template.heading.text()
    assert "No template fixes this (wrong at another shape the export declares)" in heading, heading
    open_example(qtbot, window, "threshold")
    click_problem(qtbot, window, 0)
    assert "No template fixes this" not in window.template.heading.text()  # a conversion problem: templates do
