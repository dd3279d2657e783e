"""Issue 36: what `fix --auto` refused crosses the worker as records (candidate, family, op kind,
stage, reason), and the window and the command line render them, selecting by field, not by text."""
from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from fixport.cli.fixing import print_fix_report
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_records import RejectedCandidate, TrialStage, last_rejection_for
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import AutoFixResult, ModelRequest
from fixport.core.session.fix_all import plan_from
from fixport.examples.catalog import example_path

# Bicubic resizing to a size computed at run time: torch_lib's bridge fails on the node, torch's
# decomposition passes there and fails in the whole model, and the rest fail on the whole model.
BICUBIC = "bicubic_runtime_scale"
BICUBIC_KIND = "aten::upsample_bicubic2d"


@pytest.fixture(scope="module")
def bicubic_search(worker) -> AutoFixResult:
    return worker.run(AutoFixRequest(ModelRequest(str(example_path(BICUBIC)))))


def test_rejected_candidates_cross_the_worker_as_records(bicubic_search: AutoFixResult) -> None:
    rejected = bicubic_search.rejected
    assert rejected and all(isinstance(r, RejectedCandidate) for r in rejected), rejected
    assert {r.kind for r in rejected} == {BICUBIC_KIND}
    stages = {r.stage for r in rejected}
    assert {TrialStage.ON_NODE, TrialStage.CONTRADICTED} <= stages, rejected
    bridge = next(r for r in rejected if r.stage == TrialStage.ON_NODE)
    assert (bridge.candidate, bridge.family) == ("bridge.torchlib", "torchlib_bridge")
    assert "BridgeError" in bridge.reason and not bridge.reason.startswith(bridge.candidate)  # the reason alone
    assert pickle.loads(pickle.dumps(rejected)) == rejected


def test_the_report_renders_each_record_in_one_line(bicubic_search: AutoFixResult, capsys) -> None:
    print_fix_report(ExporterRun.from_auto_fix(bicubic_search), "bicubic.fixport.json", "bicubic_runtime_scale.py")
    printed = capsys.readouterr().out
    contradicted = next(r for r in bicubic_search.rejected if r.stage == TrialStage.CONTRADICTED)
    assert (f"  rejected {contradicted.candidate} ({contradicted.family}) for {BICUBIC_KIND}: passed on the node "
            f"alone, but {contradicted.reason.splitlines()[0]}") in printed


def test_the_window_says_why_no_fix_fitted_from_the_last_record(bicubic_search: AutoFixResult) -> None:
    """The row names the last candidate tried for the kind, whatever the stage (a whole-model trial
    after an undecided node too), and never a capture setting's record, which has no kind."""
    last = RejectedCandidate("synthesized.inlined.x", "inlined_implementation", BICUBIC_KIND,
                             TrialStage.WHOLE_MODEL_AFTER_NODE, "ONNX Runtime cannot run the result")
    setting = RejectedCandidate("no_grad", "capture_setting", "", TrialStage.CAPTURE_SETTING, "it still fails")
    result = replace(bicubic_search, rejected=[*bicubic_search.rejected, last, setting], no_template=[BICUBIC_KIND],
                     opset_raised=None, capture_settings=[], choices=[])
    assert last_rejection_for(BICUBIC_KIND, result.rejected) == last
    (row,) = [o for o in plan_from(ExporterRun.from_auto_fix(result), []).outcomes if o.label == BICUBIC_KIND]
    assert not row.fitted
    assert row.how == ("no fix: synthesized.inlined.x (inlined_implementation) for aten::upsample_bicubic2d, on the "
                       "whole model: ONNX Runtime cannot run the result")
    assert setting.line() == "capture setting no_grad: it still fails"


def test_fix_auto_json_lists_records(cli, tmp_path: Path) -> None:
    fixed = cli("fix", "--auto", str(example_path(BICUBIC)), "-o", str(tmp_path / "p.fixport.json"), "--json")
    report = json.loads(fixed.stdout)
    assert report["rejected"], report
    for record in report["rejected"]:
        assert set(record) == {"candidate", "family", "kind", "stage", "reason", "setting_description", "line"}
        assert record["stage"] in set(TrialStage) and record["kind"] == BICUBIC_KIND
        assert record["line"].startswith(f"{record['candidate']} ({record['family']}) for {BICUBIC_KIND}")
