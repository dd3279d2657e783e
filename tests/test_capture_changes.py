"""Capture failures answered with a code change: made from the failing statement, tried on the
loaded model (same torch outputs, and torch.export captures it), shown as a diff in check and the
Inspector, and written to a copy of the model file that re-captures and matches torch."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from fixport.core.exporters.capture_changes import ChangedSource, propose_change
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import ProblemReason
from fixport.examples.catalog import example_path

SOURCE = textwrap.dedent('''
    import torch


    class Gate(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            if y.max() > 0.5:
                y = y + 1
                z = y
            else:
                z = -y
            if y.sum() > 0:
                y *= 3
            n = int((y > 0).sum())
            m = y.sum().item()
            print(n)
            return y[:, :n], z, m


    def helper(x):
        k = int(x.sum())
        return k
''').lstrip()


def _changed(line: int) -> str:
    change = propose_change(SOURCE, line, "u0")
    assert change is not None and change.class_name == "Gate" and change.method_name == "forward"
    return ChangedSource("gate.py", SOURCE, [change]).after


def test_a_branch_on_a_value_becomes_torch_where_for_every_name_it_assigns() -> None:
    assert "        y = torch.where(y.sum() > 0, y * 3, y)\n" in _changed(12)  # y *= 3, no else: y stays
    # z = y reads the y the branch just assigned: each side is computed first, under its own names
    assert ("        branch_taken = y.max() > 0.5\n        y_if_true = y + 1\n        z_if_true = y_if_true\n"
            "        z_if_false = -y\n        y = torch.where(branch_taken, y_if_true, y)\n"
            "        z = torch.where(branch_taken, z_if_true, z_if_false)\n") in _changed(7)


BRANCHES = textwrap.dedent('''
    import torch


    def branchy(x):
        y = x * 2
        if y.max() > 0.5:
            y = y + 1
            y = y * y
            z = y - x
        else:
            z = -y
            y = z * 3
        return y, z


    def checked(x):
        if (x < -10).any():
            raise ValueError("too small")
        assert torch.isfinite(x).all(), "not finite"
        return x + 1
''').lstrip()


def _run(source: str, name: str, x):
    scope: dict = {}
    exec(compile(source, "branches.py", "exec"), scope)  # noqa: S102 -- the test's own code
    return scope[name](x)


def test_a_rewritten_branch_computes_what_the_branch_did_on_both_sides() -> None:
    import torch

    change = propose_change(BRANCHES, 6, "u0")  # the if
    assert change is not None
    after = ChangedSource("branches.py", BRANCHES, [change]).after
    for x in (torch.tensor([1.0, -2.0]), torch.tensor([0.1, -2.0])):  # the branch taken, then not
        for expected, got in zip(_run(BRANCHES, "branchy", x), _run(after, "branchy", x)):
            torch.testing.assert_close(got, expected)


def test_a_check_on_a_value_becomes_torch_check_and_still_raises_in_torch() -> None:
    import pytest
    import torch

    changes = [propose_change(BRANCHES, line, "u0") for line in (17, 19)]
    assert all(changes)
    assert changes[0].replacement == ("    torch._check(torch.logical_not((x < -10).any()).item(), "
                                      "lambda: 'too small')",)
    assert changes[1].replacement == ("    torch._check(torch.isfinite(x).all().item(), lambda: 'not finite')",)
    after = ChangedSource("branches.py", BRANCHES, changes).after
    torch.testing.assert_close(_run(after, "checked", torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="too small"):
        _run(after, "checked", torch.tensor([-20.0]))


def test_a_size_read_from_data_stays_symbolic_and_is_checked_non_negative() -> None:
    assert "        n = (y > 0).sum().item()\n        torch._check(n >= 0)\n" in _changed(14)
    assert "        m = y.sum().item()\n        torch._check(m >= 0)\n" in _changed(15)


def test_lines_without_a_mechanical_answer_get_none() -> None:
    assert propose_change(SOURCE, 16, "u0") is None  # print(n)
    assert propose_change(SOURCE, 6, "u0") is None  # y = x * 2: no value read
    change = propose_change(SOURCE, 21, "u0")  # a module-level function: no instance to try it on
    assert change is not None and change.class_name == ""


@pytest.mark.slow
def test_check_proposes_each_change_tried_on_the_model_and_the_copy_captures(cli, worker, tmp_path: Path) -> None:
    model = tmp_path / "gate.py"
    shutil.copy(example_path("branch_on_value_dynamo"), model)
    result = worker.run(AnalyzeRequest(ModelRequest(str(model)), {"exporter": "dynamo"}))
    failures = [p for p in result.unsupported if p.reason == ProblemReason.CAPTURE_FAILED]
    assert len(failures) == 2 and all(p.code_change for p in failures), failures
    assert all("Tried on the loaded model" in p.message for p in failures)
    assert "+        scores = torch.where(scores.max() > 0.5, scores * 2.0, scores)" in failures[0].code_change
    assert "+        torch._check(count >= 0)" in failures[1].code_change

    copy = tmp_path / "gate_changed.py"
    shown = cli("check", "--exporter", "dynamo", str(model), "--write-changed", str(copy))
    assert shown.returncode == 1 and copy.is_file(), shown.stderr
    assert "+        count = (scores > 0).sum().item()" in shown.stdout
    assert "if scores.max() > 0.5:" in model.read_text(encoding="utf-8")  # the original is untouched
    changed = worker.run(AnalyzeRequest(ModelRequest(str(copy)), {"exporter": "dynamo"}))
    assert changed.unsupported == [] and changed.output_max_abs is not None and changed.output_max_abs < 1e-4


@pytest.mark.slow
def test_the_inspector_shows_the_change_and_opens_a_changed_copy(qtbot, window, tmp_path: Path) -> None:
    from tests.test_dynamo_window import switch_to_dynamo
    from tests.test_gui_flow import click_problem, run_job

    model = tmp_path / "gate.py"
    shutil.copy(example_path("branch_on_value_dynamo"), model)
    run_job(qtbot, window, lambda: window.open_path(model))
    switch_to_dynamo(qtbot, window)
    click_problem(qtbot, window, 0)
    assert "Proposed change" in window.inspector.browser.toPlainText(), window.inspector.browser.toPlainText()
    run_job(qtbot, window, window.inspector.changed_copy_requested.emit)
    assert window.workbench.project.model_path.endswith("gate_changed.py")
    assert window.workbench.analysis.options.exporter == "dynamo"  # opened as the user had it
    assert window.workbench.analysis.unsupported == [], window.log.contents()
