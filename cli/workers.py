"""The export worker a command runs its job on: its own fresh process, or a warm one lent by the caller."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from fixport.core.worker.client import ExportWorker

_lent_worker: ContextVar[ExportWorker | None] = ContextVar("lent_worker", default=None)
_commands_own: ContextVar[ExportWorker | None] = ContextVar("commands_own", default=None)
# A checkpoint whose weight files hold this much starts each component in a fresh worker
FRESH_WORKER_PER_COMPONENT_ABOVE_BYTES = 256 * 1024**2  # as big as a model whose session reads its file
WEIGHT_FILE_PATTERNS = ("*.safetensors", "*.bin")


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
        token = _commands_own.set(worker)
        try:
            yield worker
        finally:
            _commands_own.reset(token)
            worker.stop()
        return
    owners_timeout_s, lent.job_timeout_s = lent.job_timeout_s, timeout_s
    try:
        yield lent
    finally:
        lent.job_timeout_s = owners_timeout_s


def fresh_for_next_component(worker: ExportWorker, folder: Path) -> None:
    """Before a big checkpoint's next component: stop the command's own worker, so the next component
    starts in a fresh process. What one component's export leaves in the process (torch.export's
    graphs and caches, the allocator's freed pages: near a GB at 0.5 B parameters) is not carried into
    the next one's peak. A worker lent by the caller is left warm: its owner chose it."""
    if _commands_own.get() is worker and _weight_bytes(folder) >= FRESH_WORKER_PER_COMPONENT_ABOVE_BYTES:
        worker.stop()


def _weight_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for pattern in WEIGHT_FILE_PATTERNS for path in folder.glob(pattern)
               if path.is_file())
