"""The export worker a command runs its job on: its own fresh process, or a warm one lent by the caller."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from fixport.core.worker.client import ExportWorker

_lent_worker: ContextVar[ExportWorker | None] = ContextVar("lent_worker", default=None)


@contextmanager
def lending_worker(worker: ExportWorker | None) -> Iterator[None]:
    """Commands run inside this block use ``worker`` (already warm) instead of starting their own.

    For callers that run many commands in one process (the tests, a tool): a fresh worker costs
    seconds of torch imports per command. ``None`` lends nothing.
    """
    token = _lent_worker.set(worker)
    try:
        yield
    finally:
        _lent_worker.reset(token)


@contextmanager
def command_worker(timeout_s: float) -> Iterator[ExportWorker]:
    """The worker for one command's job, with the command's --timeout.

    A worker of the command's own is stopped when the command ends; a lent one is left running
    (with its own timeout back) for its owner's next job.
    """
    lent = _lent_worker.get()
    if lent is None:
        worker = ExportWorker(job_timeout_s=timeout_s)
        try:
            yield worker
        finally:
            worker.stop()
        return
    owners_timeout_s, lent.job_timeout_s = lent.job_timeout_s, timeout_s
    try:
        yield lent
    finally:
        lent.job_timeout_s = owners_timeout_s
