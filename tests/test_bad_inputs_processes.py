"""The bad-input battery, processes: whatever stops the command line or the window mid-job
(SIGKILL, SIGTERM, Ctrl+C), no export worker is left running a couple of seconds later."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.bad_input_bench import (
    ORPHAN_GRACE_S,
    REPO,
    TRACEBACK,
    WORKER_MODULE,
    make_bench,
    processes_tagged,
    wait_for_no_processes,
)

pytestmark = pytest.mark.subprocess  # each test starts and stops real commands and windows

WORKER_START_TIMEOUT_S = 60
JOB_RUNNING_S = 1.0  # after the worker is up: long enough for the looping build() to be running
COMMAND_EXIT_WAIT_S = 10  # how long the stopped command may take to exit


def _as_from_a_terminal() -> None:
    """Ctrl+C as a terminal delivers it: a test run started in the background (a shell without job
    control) ignores SIGINT, and every command it starts would inherit that and never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    return make_bench(tmp_path_factory.mktemp("bench"))


def _start(argv: list[str], tag: str) -> subprocess.Popen[str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", FIXPORT_BATTERY_TAG=tag, QT_QPA_PLATFORM="offscreen")
    return subprocess.Popen([sys.executable, str(REPO / "main.py"), *argv], cwd=REPO, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_as_from_a_terminal)


def _worker_of(tag: str, parent: subprocess.Popen[str]) -> int:
    """The pid of the tagged worker, once it runs; fails the test if it never starts."""
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        for pid in processes_tagged(tag):
            try:
                if WORKER_MODULE in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode():
                    return pid
            except OSError:
                continue
        assert parent.poll() is None, f"the command ended before its worker started:\n{parent.communicate()}"
        time.sleep(0.05)
    raise AssertionError("no worker started")


def _kill_mid_job(argv: list[str], sig: signal.Signals) -> tuple[str, subprocess.Popen[str]]:
    tag = uuid.uuid4().hex
    parent = _start(argv, tag)
    try:
        _worker_of(tag, parent)
        time.sleep(JOB_RUNNING_S)
        parent.send_signal(sig)
        parent.wait(COMMAND_EXIT_WAIT_S)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    return tag, parent


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_stopping_the_command_line_mid_job_leaves_no_worker(bench: Path, sig: signal.Signals) -> None:
    tag, parent = _kill_mid_job(["check", str(bench / "loops.py"), "--timeout", "60"], sig)
    left = wait_for_no_processes(tag, ORPHAN_GRACE_S)
    for pid in left:  # never leave our own orphans to the other tests, even when failing
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{sig.name}: worker(s) {left} still running {ORPHAN_GRACE_S} s after the command died"
    _out, err = parent.communicate()
    assert TRACEBACK not in err, err
    if sig == signal.SIGINT:
        assert parent.returncode != 0 and "interrupted" in err, err


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
def test_stopping_the_window_mid_job_leaves_no_worker(bench: Path, sig: signal.Signals) -> None:
    tag, _parent = _kill_mid_job(["gui", str(bench / "loops.py")], sig)
    left = wait_for_no_processes(tag, ORPHAN_GRACE_S)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{sig.name}: worker(s) {left} still running {ORPHAN_GRACE_S} s after the window died"

