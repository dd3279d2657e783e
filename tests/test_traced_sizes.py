"""A fix built for the traced sizes says which declared dims it pins and at what size: one function
in core, read by the Template dock, the `fix --auto` report and the window's Fix all log."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fixport.core.project.export_options import ExportOptions
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import AutoFixChoice
from fixport.core.records.results import AnalysisResult, AutoFixResult
from fixport.core.records.traced_sizes import pinned_dims_note, traced_sizes
from fixport.core.session.fix_all import plan_from
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
from fixport.gui.template_dock import OFFER_ROLE
from tests.test_declared_shapes import ADAPTIVE_POOL_MODEL, DYNAMIC_HW

POOL_KIND = "aten::adaptive_avg_pool2d"
SPECIALISED_TEMPLATE = "decompose.adaptive_avg_pool2d_matmul"
PINNED_HW = ("Built for the traced sizes: height=30, width=30 are declared dynamic; "
             "this fix may hold only there.")


def _analysis(dynamic_axes, input_names: list[str] | None = None, other_sizes: list[str] | None = None,
              unsupported: list[UnsupportedNode] | None = None) -> AnalysisResult:
    options = ExportOptions(input_names=input_names, dynamic_axes=dynamic_axes)
    result = AnalysisResult("model.py", "python", options, None, None, list(unsupported or []), ["image"],
                            [(1, 3, 30, 30)])
    result.other_sizes_checked = list(other_sizes or [])
    return result


def test_the_note_names_each_declared_dim_at_its_traced_size() -> None:
    assert pinned_dims_note(_analysis(DYNAMIC_HW["dynamic_axes"], ["image"])) == PINNED_HW
    # as a project saves them (JSON keys), on the model's own input name, one dim
    assert pinned_dims_note(_analysis({"image": {"0": "batch"}})) == (
        "Built for the traced sizes: batch=1 is declared dynamic; this fix may hold only there.")
    assert traced_sizes(ExportOptions(dynamic_axes={"image": [2], "out": {0: "n"}}), ["image"],
                        [(1, 3, 30, 30)]) == {"image_dynamic_axes_1": 30}  # a list of axes, torch.s names
    assert pinned_dims_note(_analysis(None)) == "" and pinned_dims_note(None) == ""


def test_with_the_fix_applied_the_note_says_where_the_export_also_matched() -> None:
    checked = _analysis({"image": {0: "batch"}}, other_sizes=["batch=2"])
    assert pinned_dims_note(checked, fix_applied=True) == (
        "Declared dynamic, traced at batch=1: the export with this fix also matched torch at batch=2.")
    assert pinned_dims_note(checked).endswith("this fix may hold only there.")  # before applying it: not known
    wrong = UnsupportedNode(kind="aten::mul", instance="", reason=ProblemReason.SHAPE_SPECIALISED, message="",
                            scope="", source="")
    assert pinned_dims_note(replace(checked, unsupported=[wrong]), fix_applied=True).endswith("may hold only there.")


def test_the_fix_all_log_names_the_dims_a_shape_specialised_choice_pins() -> None:
    analysis = _analysis(DYNAMIC_HW["dynamic_axes"], ["image"])
    choices = [AutoFixChoice(POOL_KIND, None, SPECIALISED_TEMPLATE, "made for this op", "hand_written",
                             shape_specialised=True),
               AutoFixChoice("aten::cosh", None, "cosh_standard", "the ONNX op of the same name", "standard_op")]
    plan = plan_from(ExporterRun.from_auto_fix(AutoFixResult(analysis, analysis, choices=choices)), [])
    assert plan.notes == [f"{POOL_KIND}: {SPECIALISED_TEMPLATE} is shape-specialised. {PINNED_HW}"]


def test_fix_auto_reports_the_dims_a_shape_specialised_fix_was_built_at(cli, tmp_path: Path) -> None:
    """A pooling matrix built at batch 1 serves every batch: the report says so from the check. (At
    opset 10: from opset 11 a cumulative-sum template that keeps sizes open comes first.)"""

    model = tmp_path / "pool.py"
    dynamic_batch = {"input_names": ["image"], "dynamic_axes": {"image": {0: "batch"}}}
    model.write_text(ADAPTIVE_POOL_MODEL.format(options=repr(dynamic_batch)), encoding="utf-8")
    shown = cli("fix", "--auto", str(model), "--opset", "10", "--keep-opset",
                "-o", str(tmp_path / "pool.fixport.json"))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "with decompose.adaptive_avg_pool2d_matmul [hand_written]" in shown.stdout, shown.stdout
    assert ("    Declared dynamic, traced at batch=1: the export with this fix also matched torch at batch=2."
            in shown.stdout), shown.stdout


def test_the_template_dock_says_which_declared_dims_a_shape_specialised_offer_pins(qtbot, window,
                                                                                  tmp_path: Path) -> None:
    from tests.test_gui_flow import choose_template, click_problem, run_job

    model = tmp_path / "pool.py"
    model.write_text(ADAPTIVE_POOL_MODEL.format(options=repr(DYNAMIC_HW)), encoding="utf-8")
    run_job(qtbot, window, lambda: window.open_path(model))
    click_problem(qtbot, window, 0)
    dock = window.template
    assert dock.target is not None and dock.target.kind == POOL_KIND
    items = {dock.offer_ids()[row]: dock.offers.item(row).text() for row in range(dock.offers.count())}
    assert PINNED_HW in items[SPECIALISED_TEMPLATE], items[SPECIALISED_TEMPLATE]
    open_fixes = [row for row in range(dock.offers.count()) if not _specialised(dock, row)]
    assert open_fixes and all(PINNED_HW not in dock.offers.item(i).text() for i in open_fixes)
    choose_template(qtbot, window, SPECIALISED_TEMPLATE)
    assert dock.description.text().endswith(PINNED_HW), dock.description.text()


def _specialised(dock, row: int) -> bool:
    offer = dock.offers.item(row).data(OFFER_ROLE)
    return offer is not None and offer.template is not None and offer.template.shape_specialised
