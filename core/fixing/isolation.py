"""Trial exports in a forked copy of the worker: a candidate that crashes torch costs itself, not the job.

A generated or user-written fix can make the TorchScript exporter segfault (shape inference on a
node it never expected). ``fix --auto`` tries many candidates; each trial export runs in a child
forked from the worker (torch and the model already loaded, so it starts in milliseconds), which
sends back the pickled result. A child that dies by a signal raises :class:`TrialCrashed` naming it,
and the next candidate is tried. Where ``fork`` is missing the trial runs in-process.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import signal
from collections.abc import Callable
from typing import TypeVar

Result = TypeVar("Result")


class TrialCrashed(RuntimeError):
    """The trial export took its process down."""


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


def run_isolated(function: Callable[[], Result]) -> Result:
    """``function()`` in a forked child; its exception is re-raised here, a crash is TrialCrashed.

    ``function`` must not talk to the worker's connection (progress, cancel): the child shares it."""
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
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise TrialCrashed(f"the export crashed the process ({_exit_reason(status)}); the candidate is skipped")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise value
    return value
