"""Issue 33 items 4 and 9: what a failed run shows and keeps. A forward() that raises is exit 2
under both exporters; an error's text on stderr is cut (an exporter's can hold a whole graph)
while the run's own log keeps it whole; each run writes its own log; numpy's RuntimeWarnings on
outputs holding inf or nan do not reach the terminal."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixport.cli import error_log
from fixport.core.words.errors import MAX_PRINTED_MESSAGE_CHARS, trimmed_message
from tests.conftest import run_main

GRAPH_LINE = "%1 : Float(2, 3) = aten::add(%x, %x)\n"
RAISING_MODEL = f"""
    import torch

    class Raising(torch.nn.Module):
        def forward(self, x):
            if x.shape[0] > 0:
                raise ValueError("bad input layout\\n" + {GRAPH_LINE!r} * 4000)
            return x

    def build():
        return Raising(), (torch.randn(2, 3),)
"""
INF_NAN_MODEL = """
    import torch

    class Overflowing(torch.nn.Module):
        def forward(self, x):
            big = torch.exp(x * 100.0)
            return big, torch.log(x), big - big, x / (x - x)

    def build():
        return Overflowing(), (torch.linspace(-5.0, 5.0, 12).reshape(3, 4),)
"""
LOG_LINE = re.compile(r"\(the details are in (.+\.log)\)")


def test_a_long_message_is_cut_at_a_line_end_and_says_how_much_is_left() -> None:
    text = "first line\n" + GRAPH_LINE * 1000
    shown = trimmed_message(text, 500)
    assert len(shown) < 600 and shown.startswith("first line\n%1")
    assert shown.splitlines()[-2] == GRAPH_LINE.strip()  # whole lines only
    assert re.search(r"… \([\d,]+ more characters in the log\)$", shown)
    assert trimmed_message("short") == "short"


def test_each_run_writes_its_own_log_and_old_ones_are_pruned(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(error_log, "KEPT_ERROR_LOGS", 3)
    paths = [error_log.write_error_log(f"run {i}", tmp_path) for i in range(5)]
    assert all(paths) and len(set(paths)) == 5
    assert sorted(p.name for p in tmp_path.glob(error_log.RUN_LOG_PATTERN)) == sorted(p.name for p in paths[2:])
    assert (tmp_path / error_log.LATEST_ERROR_LOG_NAME).read_text() == "run 4"
    assert paths[-1].read_text() == "run 4"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_forward_that_raises_is_exit_2_with_a_short_message_and_its_own_log(
        exporter: str, model_file, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the logs land in this test's own folder
    model = str(model_file("raising.py", RAISING_MODEL))
    checked = run_main("check", model, "--exporter", exporter)
    assert checked.returncode == 2, checked.stdout + checked.stderr  # the model's error, not a problem found
    assert "ValueError: bad input layout" in checked.stderr and "raising.py" in checked.stderr
    assert "The error comes from the model's forward()" in checked.stderr and "Traceback" not in checked.stderr
    assert len(checked.stderr) < MAX_PRINTED_MESSAGE_CHARS, checked.stderr
    assert "more characters in the log" in checked.stderr
    log = Path(LOG_LINE.search(checked.stderr)[1])
    assert log.parent == tmp_path / "home" / ".cache" / "fixport" and log.name.startswith("error-")
    assert log.read_text().count(GRAPH_LINE) >= 4000  # the whole message, in the traceback
    assert "Traceback" in log.read_text()

    again = run_main("check", model, "--exporter", exporter)
    second_log = Path(LOG_LINE.search(again.stderr)[1])
    assert second_log != log and log.exists()  # each run its own log; the first is still there
    assert (log.parent / "last-error.log").read_text() == second_log.read_text()


def test_an_exporter_error_without_details_still_leaves_a_log(cli, model_file, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    model = str(model_file("tiny.py", """
        import torch

        def build():
            return torch.nn.Linear(3, 2), (torch.randn(2, 3),)
    """))
    checked = cli("check", model, "--exporter", "dynamo", "--dynamic-axes", '{"nope": {"0": "batch"}}')
    assert checked.returncode == 2 and "nope" in checked.stderr
    assert "Traceback" in Path(LOG_LINE.search(checked.stderr)[1]).read_text()


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_compare_on_outputs_with_inf_and_nan_prints_no_runtime_warning(exporter: str, model_file) -> None:
    compared = run_main("compare", str(model_file("overflowing.py", INF_NAN_MODEL)), "--exporter", exporter)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "RuntimeWarning" not in compared.stdout + compared.stderr
    assert "PASS" in compared.stdout
