"""Shared test setup: offscreen Qt, one torch thread, one warm export worker per session."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fixport.core.worker.client import ExportWorker

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread() -> None:
    """Two cores are shared by everything: torch's default threads fight over them."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def worker() -> Iterator[ExportWorker]:
    """A warm export worker shared by the tests (a cold one costs seconds of imports)."""
    from fixport.core.worker.client import ExportWorker

    shared = ExportWorker(job_timeout_s=300)
    yield shared
    shared.stop()


@pytest.fixture
def model_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a model file from source text: model_file("name.py", source) -> path."""
    def write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path
    return write


@pytest.fixture
def small_threshold(monkeypatch, tmp_path: Path) -> Path:
    """Weights above 1 kB go to disk, so small real exports take a real-size one's path; temporary
    folders are made in (and counted from) the returned one."""
    import tempfile

    import fixport.core.onnx_io.onnx_model as onnx_model

    monkeypatch.setattr(onnx_model, "WEIGHTS_ON_DISK_ABOVE_BYTES", 1000)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.fixture
def window(qtbot, worker, tmp_path: Path, monkeypatch):
    """The real MainWindow on the shared warm worker, with its settings and autosaves in tmp_path."""
    from PySide6.QtCore import QSettings

    from fixport.gui.job_runner import JobRunner
    from fixport.gui.main_window import MainWindow

    monkeypatch.setenv("FIXPORT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "data" / "autosave")
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    main = MainWindow(settings=settings, runner=JobRunner(worker=worker))
    qtbot.addWidget(main)
    main.resize(1400, 900)
    main.show()
    return main


def slow_but_one(values: Iterable[Any], fast: str, name: Callable[[Any], str] = str) -> list[Any]:
    """Parameters for a sweep of like cases: the one named ``fast`` stays in the fast tier, the others
    are marked slow (the full run still runs them all)."""
    values = list(values)
    assert fast in map(name, values), f"{fast} is not one of the cases"
    return [pytest.param(value, id=name(value), marks=() if name(value) == fast else pytest.mark.slow)
            for value in values]


def run_main(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `python main.py ARGS` as a user would, from the repository folder."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(REPO / "main.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli(worker, capsys, monkeypatch) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a command in this process on the warm worker: cli("check", path) gives what run_main
    would (exit code, stdout, stderr), without a new process and its seconds of torch imports."""
    from fixport.cli import error_log
    from fixport.cli.app import main

    monkeypatch.chdir(REPO)  # where run_main runs `python main.py`

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        # A new process reads $HOME when it starts: the log folder follows a HOME the test set.
        monkeypatch.setattr(error_log, "ERROR_LOG_DIR", Path.home() / ".cache" / "fixport")
        capsys.readouterr()  # only this command's output
        try:
            code = main(list(args), worker=worker)
        except SystemExit as stop:  # argparse's usage errors and --help
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["main.py", *args], code, out, err)
    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tiers from what a test uses: Qt widgets (qtbot) are gui, `python main.py` runs are subprocess."""
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gui)
        function = getattr(item, "function", None)
        if function is not None and "run_main" in function.__code__.co_names:
            item.add_marker(pytest.mark.subprocess)


@pytest.fixture(autouse=True)
def _no_leaked_windows(request) -> Iterator[None]:
    """Like napari's viewer fixture: a test must close every window it opened."""
    yield
    if "qtbot" not in request.fixturenames:
        return
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        return
    app.processEvents()
    leaked = [w for w in app.topLevelWidgets() if w.isVisible() and w.isWindow()
              and type(w).__name__ not in ("QToolTip", "QTipLabel", "QMenu")]
    for widget in leaked:
        widget.close()
    assert not leaked, f"windows left open: {[type(w).__name__ for w in leaked]}"
