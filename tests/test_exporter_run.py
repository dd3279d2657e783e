"""The "run one exporter" job (check, fix --auto, compare): the one pipeline behind sweep rows and
`compare --exporters`, with one rule for "compare can run" and one for "the options after a fix"."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixport.core.records.exporter_comparison import FIXES_FROM_AUTO_FIX, NO_AUTO_FIX, ExporterRun, RunStep
from fixport.core.records.requests import RunExporterRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason, keeps_compare_from_running
from tests.conftest import REPO
from tests.test_compare import CUSTOM_DOMAIN_MODEL

THRESHOLD = REPO / "examples" / "threshold.py"  # aten::threshold has no symbolic for it; fix --auto fixes it


def _problem(reason: ProblemReason) -> UnsupportedNode:
    return UnsupportedNode(kind="aten::threshold", instance="", reason=reason, message="", scope="", source="m.py:3")


def test_compare_runs_past_a_node_onnx_runtime_cannot_run_but_not_past_one_that_does_not_convert() -> None:
    """One rule (the window's Compare, sweep rows, compare --exporters): a node ONNX Runtime cannot run
    is in an export, and compare runs it on its reference kernel; a node that does not convert leaves
    no export."""
    assert not keeps_compare_from_running(ProblemReason.RUNTIME_ERROR)
    assert not keeps_compare_from_running(ProblemReason.MISMATCH)
    assert keeps_compare_from_running(ProblemReason.SYMBOLIC_REJECTED)
    run = ExporterRun("torchscript", left=[_problem(ProblemReason.RUNTIME_ERROR),
                                           _problem(ProblemReason.SYMBOLIC_REJECTED)])
    assert [problem.reason for problem in run.blocking] == [ProblemReason.SYMBOLIC_REJECTED]
    assert run.error == ("1 problem(s) keep the export from running in ONNX Runtime: "
                         "aten::threshold (symbolic_rejected)")
    assert run.failed(RunStep.FIX, "no template fits").error == "fix --auto failed: no template fits"


def test_one_run_is_records_check_fix_and_compare(worker) -> None:
    steps: list[str] = []

    class Progress:  # as the worker's: partial pieces arrive at each step's start
        def __call__(self, fraction: float, message: str = "") -> None: ...

        def partial(self, piece: object) -> None:
            steps.append(piece.step)

    from fixport.core.exporter_comparison.exporter_run import run_exporter

    request = RunExporterRequest(ModelRequest(str(THRESHOLD)), {"exporter": "torchscript"}, auto_fix=True)
    run = run_exporter(request, Progress())
    assert steps == ["check", "fix", "compare"]
    assert [(p.kind, p.reason) for p in run.found] == [("aten::threshold", ProblemReason.SYMBOLIC_REJECTED)]
    assert run.fixes_from == FIXES_FROM_AUTO_FIX and run.auto_fix is not None and run.left == []
    assert run.mappings == run.auto_fix.mappings and run.fixes[0].startswith("aten::threshold -> ")
    # the options after a fix, by the one rule: the opset the search exported at is pinned
    assert run.options == {"exporter": "torchscript", "opset": run.auto_fix.after.options.opset}
    assert run.passed and not run.error

    unfixed = worker.run(RunExporterRequest(ModelRequest(str(THRESHOLD)), {"exporter": "torchscript"}))
    assert isinstance(unfixed, ExporterRun) and unfixed.fixes_from == NO_AUTO_FIX
    assert not unfixed.compared and unfixed.blocking == unfixed.found and unfixed.auto_fix is None


@pytest.mark.slow
def test_a_sweep_row_compares_an_export_whose_custom_node_runs_on_its_reference(worker, model_file) -> None:
    """The sweep said "not compared" for a node ONNX Runtime cannot run, where compare passes on the
    node's torch reference; its rows now follow the one rule."""
    pytest.importorskip("onnxruntime_extensions")
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.sweep.rows import SweepSettings

    path: Path = model_file("custom_threshold.py", CUSTOM_DOMAIN_MODEL)
    steps: list[str] = []
    row = sweep_model(worker, path, "torchscript", SweepSettings(), on_step=steps.append)
    assert row.problems == ["aten::threshold (runtime_error)"] and row.status == "problems"
    assert (row.verdict, row.message) == ("pass", ""), row
    assert steps == ["check", "compare"] and set(row.seconds) == {"check", "compare"}


UNFOLD_EMPTY_BATCH = """
    import torch

    class Unfold(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.unfold(x, 2, 1, 0, 1)

    def build():
        return Unfold().eval(), (torch.zeros(0, 1, 5, 5),)
"""


@pytest.mark.slow
def test_a_crash_while_converting_is_the_problem_a_sweep_row_lists(worker, model_file) -> None:
    """torch dies converting unfold on an empty batch: the one job's crash comes while check converts
    (its StepStarted piece says so), so the row lists it as check does, and the run goes on from there."""
    from fixport.core.sweep.model_sweep import sweep_model
    from fixport.core.sweep.rows import SweepSettings

    row = sweep_model(worker, model_file("unfold_empty_batch.py", UNFOLD_EMPTY_BATCH), "torchscript",
                      SweepSettings())
    assert row.problems == ["(export) (worker_crash)"] and row.status == "problems", row
    assert row.verdict == "not compared" and "worker_crash" in row.message and "check" in row.seconds
