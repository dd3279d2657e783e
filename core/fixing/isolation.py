"""Trial exports in a forked copy of the worker: a candidate that crashes torch costs itself, not the job.

A generated or user-written fix can make the TorchScript exporter segfault (shape inference on a
node it never expected). ``fix --auto`` tries many candidates; each trial export runs in a child
forked from the worker (torch and the model already loaded, so it starts in milliseconds), which
sends back the pickled result. A child that dies by a signal raises :class:`TrialCrashed` naming it,
and the next candidate is tried. Where ``fork`` is missing the trial runs in-process.

While the child works the parent is free: it calls ``waiting(seconds)`` every
:data:`HEARTBEAT_S` (the search reports "still trying …", which also tells the worker's
no-progress limit that the job is alive), kills the child when ``cancelled()`` turns true
(:class:`Cancelled`) or when ``deadline`` passes (:class:`TrialStopped`).
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import TypeVar

from fixport.core.words.cancel import CancelCallback, Cancelled

Result = TypeVar("Result")
HEARTBEAT_S = 5.0  # how often a waiting parent reports: the user sees a line at least every 10 s
POLL_S = 0.1  # how often it looks at cancel and the deadline


class TrialCrashed(RuntimeError):
    """The trial export took its process down; ``how``: 'signal SIGSEGV', 'exit code 3'."""

    def __init__(self, message: str, how: str = "") -> None:
        super().__init__(message)
        self.how = how


class TrialStopped(RuntimeError):
    """The trial ran past the search's deadline and its process was killed."""


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(number).name}"
        except ValueError:
            return f"signal {number}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _child(function: Callable[[], Result], write_fd: int) -> None:
    try:
        payload = pickle.dumps(("ok", function()))
    except BaseException as error:  # noqa: BLE001 -- everything goes back to the parent as it is
        try:
            payload = pickle.dumps(("error", error))
        except Exception:  # noqa: BLE001 -- an exception that cannot be pickled: its text
            payload = pickle.dumps(("error", RuntimeError(f"{type(error).__name__}: {error}")))
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)


def run_isolated(function: Callable[[], Result], *, waiting: Callable[[float], None] | None = None,
                 cancelled: CancelCallback | None = None, deadline: float | None = None) -> Result:
    """``function()`` in a forked child; its exception is re-raised here, a crash is TrialCrashed.

    ``function`` must not talk to the worker's connection (progress, cancel): the child shares it.
    ``deadline`` is a ``time.monotonic()`` time."""
    if not hasattr(os, "fork"):
        return function()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the worker's loop
        os.close(read_fd)
        faulthandler.disable()  # a crash is expected and reported by the parent, not dumped on stderr
        try:
            _child(function, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        data = _read_while_waiting(read_fd, waiting, cancelled, deadline)
    except BaseException:
        _kill(pid)
        raise
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if not data:
        how = _exit_reason(status)
        raise TrialCrashed(f"the export crashed the process ({how}); the candidate is skipped", how)
    kind, value = pickle.loads(data)
    if kind == "error":
        raise value
    return value


def _read_while_waiting(read_fd: int, waiting: Callable[[float], None] | None, cancelled: CancelCallback | None,
                        deadline: float | None) -> bytes:
    """Everything the child writes, reporting every HEARTBEAT_S and stopping on cancel or the deadline."""
    chunks: list[bytes] = []
    started = last_beat = time.monotonic()
    while True:
        ready, _, _ = select.select([read_fd], [], [], POLL_S)
        if ready:
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            continue
        now = time.monotonic()
        if cancelled is not None and cancelled():
            raise Cancelled()
        if deadline is not None and now > deadline:
            raise TrialStopped(f"stopped by the time limit after {now - started:.0f} s")
        if waiting is not None and now - last_beat >= HEARTBEAT_S:
            last_beat = now
            waiting(now - started)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
