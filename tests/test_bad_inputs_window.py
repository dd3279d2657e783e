"""The bad-input battery, window: opening each broken file shows a message that names the problem
(no traceback), leaves the file as it was, and the window then opens a good model as usual."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixport.gui.main_window import MainWindow
from tests.bad_input_bench import TRACEBACK, make_bench, snapshot

JOB_TIMEOUT_MS = 120_000

BAD_FILES = [
    ("missing.py", ("not found",)),
    ("folder.onnx", ("folder",)),
    ("pipe.onnx", ("FIFO",)),
    ("notes.txt", ("Unknown model file type",)),
    ("empty.onnx", ("empty (0 bytes)",)),
    ("no_nodes.onnx", ("no graph",)),
    ("garbage.onnx", ("not a readable ONNX",)),
    ("syntax_error.py", ("Syntax error", "line 2")),
    ("null_bytes.py", ("null bytes",)),
    ("exits.py", ("sys.exit(5)",)),
    ("raises.py", ("model file boom",)),
    ("no_build.py", ("build()",)),
    ("builds_an_int.py", ("must return",)),
    ("garbage.pt2", ("ExportedProgram",)),
    ("no_program.pt2", ("no exported program",)),
    ("garbage.pt", ("not a PyTorch archive",)),
    ("not_json.fixport.json", ("Cannot read project",)),
    ("a_list.fixport.json", ("not a Fixport project",)),
]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    return make_bench(tmp_path_factory.mktemp("bench"))


def open_and_wait(qtbot, window: MainWindow, path: Path) -> None:
    window.open_path(path)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=JOB_TIMEOUT_MS)


@pytest.mark.parametrize("name, words", BAD_FILES, ids=[name for name, _ in BAD_FILES])
def test_a_bad_file_shows_a_message_and_the_window_stays_usable(qtbot, window: MainWindow, bench: Path,
                                                                name: str, words: tuple[str, ...]) -> None:
    before = snapshot(bench)
    open_and_wait(qtbot, window, bench / name)
    shown = window.actions.banner.text()
    assert window.actions.banner.isVisible(), f"{name}: no message shown"
    for word in words:
        assert word.lower() in shown.lower(), f"{name}: {word!r} missing from {shown!r}"
    assert TRACEBACK not in shown
    assert "tracing…" not in window.graphs.left.header.text(), f"{name}: the source pane still says it traces"
    assert snapshot(bench) == before, f"{name}: a bench file changed"
    open_and_wait(qtbot, window, bench / "tiny.py")
    analysis = window.workbench.analysis
    assert analysis is not None and not analysis.unsupported, window.log.contents()


def test_the_panes_say_the_model_is_on_its_way_while_it_opens(qtbot, window: MainWindow, bench: Path) -> None:
    window.open_path(bench / "tiny.py")
    assert window.graphs.left.header.text() == "TorchScript graph — tracing…"
    assert window.graphs.right.header.text() == "ONNX — exporting…"
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=JOB_TIMEOUT_MS)
    assert window.graphs.left.header.text().startswith("TorchScript graph (traced) — ")
