"""A persistent worker process for everything that touches torch's exporter.

The exporter's symbolic registry and flags are process-global and user symbolics can crash
or hang, so exports never run in the caller's process. The worker stays warm between jobs
(imports cost seconds, a warm job well under one); the registry is restored after every job;
a crash, a hang past the timeout, or a cancel kills it, and the next job starts a new one.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from fixport.core.model.cancel import CancelCallback, Cancelled, ProgressCallback
from fixport.core.model.errors import FixportError, WorkerError

DEFAULT_JOB_TIMEOUT_S = 600.0
# Modules whose public functions the worker runs by name.
JOB_MODULES = ("fixport.core.exporters.analysis", "fixport.core.exporters.op_info", "fixport.core.fixing.auto_fix",
               "fixport.core.comparison.compare_job", "fixport.core.worker.server")
POLL_INTERVAL_S = 0.05
SHUTDOWN_GRACE_S = 2.0


@dataclass
class _Failure:
    """An error crossing the process boundary (exceptions with extra fields don't pickle)."""

    type_name: str
    message: str
    hint: str
    details: str
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. a template error's line

    @classmethod
    def from_exception(cls, exc: FixportError) -> _Failure:
        extra = {k: v for k, v in vars(exc).items() if k not in ("message", "hint", "details")}
        return cls(type(exc).__name__, exc.message, exc.hint, exc.details, extra)

    def to_exception(self) -> FixportError:
        from fixport.core.model import errors

        cls = getattr(errors, self.type_name, FixportError)
        if not (isinstance(cls, type) and issubclass(cls, FixportError)):
            cls = FixportError
        exception = cls(self.message, self.hint, self.details)
        vars(exception).update(self.extra)
        return exception


class ExportWorker:
    """Client side: runs named jobs from :mod:`fixport.core.exporters.analysis` in the worker process."""

    def __init__(self, job_timeout_s: float = DEFAULT_JOB_TIMEOUT_S) -> None:
        self.job_timeout_s = job_timeout_s
        self._process: subprocess.Popen | None = None
        self._connection: Connection | None = None
        self._lock = threading.Lock()  # one job at a time per worker
        self.starts = 0

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def restarts(self) -> int:
        """How many times a new process replaced a crashed, hung or cancelled one."""
        return max(self.starts - 1, 0)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the process now (it warms up its imports while the caller goes on).

        A fresh interpreter (`python -m fixport.core.worker.server FD`), not multiprocessing's spawn: spawn
        re-runs the caller's main script in the child, which a user's script may not guard.
        """
        if self.alive:
            return
        parent, child = socket.socketpair()
        environment = dict(os.environ, OMP_NUM_THREADS="1")
        self._process = subprocess.Popen([sys.executable, "-m", "fixport.core.worker.server", str(child.fileno())],
                                         pass_fds=(child.fileno(),), env=environment,
                                         stdin=subprocess.DEVNULL)
        child.close()
        self.starts += 1
        self._connection = Connection(parent.detach())

    def stop(self) -> None:
        """Kill the process; the next job starts a fresh one."""
        process, self._process = self._process, None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(SHUTDOWN_GRACE_S)

    def run(self, job: str, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None, timeout_s: float | None = None, **arguments: Any) -> Any:
        """Run ``fixport.core.exporters.analysis.<job>(**arguments)`` in the worker and return its result."""
        with self._lock:
            if not self.alive:
                self.stop()
                self.start()
            assert self._connection is not None
            self._connection.send((job, arguments))
            return self._wait_for_result(job, progress, cancelled, timeout_s or self.job_timeout_s)

    def _wait_for_result(self, job: str, progress: ProgressCallback | None,
                         cancelled: CancelCallback | None, timeout_s: float) -> Any:
        assert self._connection is not None and self._process is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if cancelled is not None and cancelled():
                self.stop()
                raise Cancelled()
            if time.monotonic() > deadline:
                self.stop()
                raise WorkerError(f"The worker did not finish '{job}' within {timeout_s:.0f} s and was stopped.",
                                  "A symbolic may loop forever; check the template's code, or raise the timeout.")
            try:
                ready = self._connection.poll(POLL_INTERVAL_S)
                message = self._connection.recv() if ready else None
            except (EOFError, OSError):
                message = None
                ready = True
            if not ready:
                continue
            if message is None:
                try:
                    code = self._process.wait(SHUTDOWN_GRACE_S)  # let it finish dying to read its exit code
                except subprocess.TimeoutExpired:
                    code = None
                self.stop()
                raise WorkerError(f"The export worker crashed while running '{job}' (exit code {code}).",
                                  "Your work is kept. A symbolic or the model's code may have crashed the "
                                  "process; fix it and try again — a new worker starts automatically.")
            kind, payload = message
            if kind == "progress" and progress is not None:
                progress(*payload)
            elif kind == "result":
                return payload
            elif kind == "error":
                raise payload.to_exception()
