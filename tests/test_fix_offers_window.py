"""Issue 46 in the window: the Template dock names the new kinds of fix for a selected problem before
Fix all (a code change while tracing, a capture's code change, a capture setting), shows what each
changes, and applies one as Fix all does: the problem goes, and the saved project keeps the fix."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from fixport.core.exporters.capture_change_fix import TRACED_CODE_CHANGE_TEMPLATE_ID
from fixport.core.words.vocabulary import ProblemReason
from fixport.gui.job_runner import JobRunner
from fixport.gui.main_window import MainWindow
from fixport.symbolics.synthesis.graph_rewrite import CAST_INTEGER_OPERAND_ID
from fixport.symbolics.synthesis.runtime_scale import RUNTIME_SCALE_ID
from tests.test_graph_rewrites import MASK_LINE, MASKED_ATTENTION
from tests.test_gui_flow import click_problem, run_job
from tests.test_traced_size_change_fix import ENCODEC_LIKE, PAD_LINE
from tests.test_traced_value_input import SCALE_LINE, SUPER_RESOLUTION

OFFERS_TIMEOUT_MS = 60_000  # the fix-offers job reads the problem's candidates: no export


def _click_offer(qtbot, window: MainWindow, offer_id: str) -> None:
    dock = window.template
    row = dock.offer_ids().index(offer_id)
    rect = dock.offers.visualItemRect(dock.offers.item(row))
    qtbot.mouseClick(dock.offers.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 12, rect.center().y()))


def _saved_and_reopened(qtbot, window: MainWindow, worker, tmp_path: Path, monkeypatch, name: str) -> MainWindow:
    """The window's project saved as ``name`` and opened in a second window."""
    project_path = tmp_path / name
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(project_path), ""))
    window.actions["save_project"].trigger()
    reopened = MainWindow(settings=QSettings(str(tmp_path / "s2.ini"), QSettings.Format.IniFormat),
                          runner=JobRunner(worker=worker))
    qtbot.addWidget(reopened)
    reopened.show()
    run_job(qtbot, reopened, lambda: reopened.open_path(project_path))
    return reopened


def test_the_traced_size_change_is_offered_applied_and_kept(qtbot, window: MainWindow, worker, model_file,
                                                            tmp_path: Path, monkeypatch) -> None:
    path = model_file("padded_conv.py", ENCODEC_LIKE)
    run_job(qtbot, window, lambda: window.open_path(path))
    problems = window.workbench.analysis.unsupported
    assert [p.reason for p in problems] == [ProblemReason.SHAPE_SPECIALISED], problems
    click_problem(qtbot, window, 0)
    dock = window.template
    qtbot.waitUntil(lambda: TRACED_CODE_CHANGE_TEMPLATE_ID in dock.fix_offer_ids(), timeout=OFFERS_TIMEOUT_MS)
    assert dock.offer_ids()[0] == TRACED_CODE_CHANGE_TEMPLATE_ID  # listed first, beside the op templates
    assert len(dock.offer_ids()) > 1
    _click_offer(qtbot, window, TRACED_CODE_CHANGE_TEMPLATE_ID)
    row = dock.offers.item(0).text()
    assert row.startswith(f"Change {PAD_LINE} while tracing") and "traced_size_change" in row
    shown = dock.editor.source()  # what it changes: the diff of the line, read-only
    assert shown.startswith("--- padded_conv.py") and \
        "+        extra = (n + self.stride - 1) // self.stride * self.stride - n" in shown, shown
    assert dock.editor.isReadOnly() and dock.apply_kind_button.text() == "Apply this fix"

    run_job(qtbot, window, lambda: qtbot.mouseClick(dock.apply_kind_button, Qt.MouseButton.LeftButton))
    assert window.workbench.analysis.unsupported == [], window.log.contents()
    assert [m.template_id for m in window.workbench.project.mappings] == [TRACED_CODE_CHANGE_TEMPLATE_ID]

    script = tmp_path / "padded_export.py"  # the fix script makes the same change, as for Fix all's fixes
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(script), ""))
    window.actions["export_script"].trigger()
    assert "(n + self.stride - 1) // self.stride" in script.read_text()
    reopened = _saved_and_reopened(qtbot, window, worker, tmp_path, monkeypatch, "padded.fixport.json")
    assert [m.template_id for m in reopened.workbench.project.mappings] == [TRACED_CODE_CHANGE_TEMPLATE_ID]
    assert reopened.workbench.analysis.unsupported == [], reopened.log.contents()


BRANCH_ON_A_VALUE = '''
import torch
from torch import nn

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {"exporter": "dynamo"}}


class Branch(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            x = x * 2.0
        else:
            x = x - 1.0
        return x + 1.0


def build():
    torch.manual_seed(0)
    return Branch().eval(), (torch.randn(2, 8),)
'''
CAPTURE_CHANGE_ID = "dynamo.capture_code_change"


def test_a_capture_failure_is_offered_its_code_change_and_the_capture_settings(qtbot, window: MainWindow, worker,
                                                                               model_file, tmp_path: Path,
                                                                               monkeypatch) -> None:
    """A capture that stops on a value has no node: picking it in Problems lists its fixes alone."""
    path = model_file("branch.py", BRANCH_ON_A_VALUE)
    run_job(qtbot, window, lambda: window.open_path(path))
    problems = window.workbench.analysis.unsupported
    assert [p.reason for p in problems] == [ProblemReason.CAPTURE_FAILED], problems
    click_problem(qtbot, window, 0)
    dock = window.template
    qtbot.waitUntil(lambda: CAPTURE_CHANGE_ID in dock.offer_ids(), timeout=OFFERS_TIMEOUT_MS)
    # no op template for a capture failure: its code change first, then torch's own settings for it
    assert dock.offer_ids() == [CAPTURE_CHANGE_ID, "setting.size_scalars", "setting.deferred_asserts",
                                "setting.draft_export"]
    assert dock.offers.item(0).text().startswith("Change branch.py:10 for the capture only")
    assert "+        x = torch.where(x.mean() > 0, x * 2.0, x - 1.0)" in dock.editor.source()
    _click_offer(qtbot, window, "setting.draft_export")
    assert dock.editor.source().startswith("export option capture_settings: + draft_export")
    assert not dock.stub_button.isEnabled() and not dock.apply_node_button.isEnabled()

    _click_offer(qtbot, window, CAPTURE_CHANGE_ID)
    run_job(qtbot, window, lambda: qtbot.mouseClick(dock.apply_kind_button, Qt.MouseButton.LeftButton))
    assert window.workbench.analysis.unsupported == [], window.log.contents()
    assert [m.template_id for m in window.workbench.project.mappings] == [CAPTURE_CHANGE_ID]
    qtbot.waitUntil(lambda: dock.target is None, timeout=5_000)  # the problem it offered fixes for is gone

    reopened = _saved_and_reopened(qtbot, window, worker, tmp_path, monkeypatch, "branch.fixport.json")
    assert [m.template_id for m in reopened.workbench.project.mappings] == [CAPTURE_CHANGE_ID]
    assert reopened.workbench.analysis.unsupported == [], reopened.log.contents()


def test_a_capture_setting_applied_from_the_dock_is_an_export_option(qtbot, window: MainWindow, model_file) -> None:
    path = model_file("branch.py", BRANCH_ON_A_VALUE)
    run_job(qtbot, window, lambda: window.open_path(path))
    click_problem(qtbot, window, 0)
    dock = window.template
    qtbot.waitUntil(lambda: "setting.deferred_asserts" in dock.offer_ids(), timeout=OFFERS_TIMEOUT_MS)
    _click_offer(qtbot, window, "setting.deferred_asserts")
    run_job(qtbot, window, lambda: qtbot.mouseClick(dock.apply_kind_button, Qt.MouseButton.LeftButton))
    assert window.workbench.project.export_options["capture_settings"] == ["deferred_asserts"]
    assert window.workbench.analysis.options.capture_settings == ["deferred_asserts"]
    assert "Applied the capture setting deferred_asserts" in window.log.contents()

DYNAMO_MASKED_ATTENTION = MASKED_ATTENTION.replace('"export_options": {', '"export_options": {"exporter": "dynamo", ')


@pytest.mark.parametrize(("file", "source", "offer_id", "name", "change"), [
    pytest.param("masked_attention.py", DYNAMO_MASKED_ATTENTION, CAST_INTEGER_OPERAND_ID,
                 "Rewrite the captured graph at aten::", f"node: aten::sub.Tensor at {MASK_LINE}\nrewrite: an FX pass",
                 marks=pytest.mark.slow),  # two captures with torch.export
    ("super_resolution.py", SUPER_RESOLUTION, RUNTIME_SCALE_ID, "Keep the value an input: aten::upsample_bicubic2d",
     f"node: aten::upsample_bicubic2d at {SCALE_LINE}\nbecomes: the resize as a generated autograd.Function"),
], ids=["graph_rewrite", "traced_value_input"])
def test_a_rewrite_and_a_generated_function_name_their_node(qtbot, window: MainWindow, model_file, file: str,
                                                            source: str, offer_id: str, name: str, change: str) -> None:
    run_job(qtbot, window, lambda: window.open_path(model_file(file, source)))
    assert len(window.workbench.analysis.unsupported) == 1, window.workbench.analysis.unsupported
    click_problem(qtbot, window, 0)
    dock = window.template
    qtbot.waitUntil(lambda: offer_id in dock.fix_offer_ids(), timeout=OFFERS_TIMEOUT_MS)
    _click_offer(qtbot, window, offer_id)
    assert dock.offers.currentItem().text().startswith(name), dock.offers.currentItem().text()
    assert dock.editor.source().startswith(change), dock.editor.source()
    run_job(qtbot, window, lambda: qtbot.mouseClick(dock.apply_kind_button, Qt.MouseButton.LeftButton))
    assert window.workbench.analysis.unsupported == [], window.log.contents()
    assert [m.template_id for m in window.workbench.project.mappings] == [offer_id]
