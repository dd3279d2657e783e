"""A persistent worker process for everything that touches torch's exporter.

The exporter's symbolic registry and flags are process-global and user symbolics can crash
or hang, so exports never run in the caller's process. The worker stays warm between jobs
(imports cost seconds, a warm job well under one); the registry is restored after every job.

Cancel is cooperative first: the client sends a cancel message, the job's ``cancelled()`` turns
true and the job raises :class:`Cancelled` at its next check, so the warm worker survives. A job
that does not stop within :data:`CANCEL_GRACE_S` (it is inside torch, or user code loops), a
crash, or a hang past the timeout kills the process, and the next job starts a new one. The
worker exits on its own when its parent dies (see :mod:`.server`).
"""
from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from fixport.core.foundation.errors import FixportError
from fixport.core.words.cancel import CancelCallback, Cancelled, PartialCallback, ProgressCallback
from fixport.core.words.errors import WorkerCrashed, WorkerError
from fixport.core.worker.jobs import Job, job_for

# How long a job may go without reporting progress. Long enough for a cold worker (torch import,
# first export: 10-20 s on 2 cores) and for one stage of a real-size model (tracing a 0.5 B LM,
# writing its 2 GB); short enough that a looping build() or symbolic is stopped while the user
# waits. A job that keeps reporting progress is never stopped by it, however long it runs in all.
# The command line raises it with --timeout SECONDS.
DEFAULT_JOB_TIMEOUT_S = 120.0
POLL_INTERVAL_S = 0.05
SHUTDOWN_GRACE_S = 2.0
CANCEL_GRACE_S = 2.0  # a cancelled job that has not stopped by then is killed with its process


@dataclass
class JobFailure:
    """An error crossing the process boundary (exceptions with extra fields don't pickle)."""

    type_name: str
    message: str
    hint: str
    details: str
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. a template error's line

    @classmethod
    def from_exception(cls, exc: FixportError) -> JobFailure:
        extra = {k: v for k, v in vars(exc).items() if k not in ("message", "hint", "details") and _picklable(v)}
        return cls(type(exc).__name__, exc.message, exc.hint, exc.details, extra)

    def to_exception(self) -> FixportError:
        from fixport.core.foundation import errors as foundation_errors
        from fixport.core.words import errors as engine_errors

        # The user's errors are the foundation's (a fix script raises them too) or the engine's own.
        cls = getattr(engine_errors, self.type_name, None) or getattr(foundation_errors, self.type_name, FixportError)
        if not (isinstance(cls, type) and issubclass(cls, FixportError)):
            cls = FixportError
        exception = cls(self.message, self.hint, self.details)
        vars(exception).update(self.extra)
        return exception


class ExportWorker:
    """Client side: runs the job a typed request names (:data:`.jobs.JOBS`) in the worker process."""

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
        """How many times a new process replaced a crashed, hung or killed one."""
        return max(self.starts - 1, 0)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the process now (it warms up its imports while the caller goes on).

        A fresh interpreter (`python -m fixport.core.worker.server FD PARENT_PID`), not
        multiprocessing's spawn: spawn re-runs the caller's main script in the child, which a
        user's script may not guard. The worker watches PARENT_PID and exits when it is gone.
        """
        if self.alive:
            return
        parent, child = socket.socketpair()
        environment = dict(os.environ, OMP_NUM_THREADS="1")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "fixport.core.worker.server", str(child.fileno()), str(os.getpid())],
            pass_fds=(child.fileno(),), env=environment, stdin=subprocess.DEVNULL)
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
            try:
                process.wait(SHUTDOWN_GRACE_S)
            except subprocess.TimeoutExpired:
                pass  # killed, still releasing a large memory: the kernel finishes it without us

    def run(self, request: object, progress: ProgressCallback | None = None,
            cancelled: CancelCallback | None = None, timeout_s: float | None = None,
            partial: PartialCallback | None = None) -> Any:
        """Run the job for ``request`` (its type picks it) in the worker and return its result;
        ``partial`` receives early pieces of it (e.g. the traced graph before the export ends).

        Raises :class:`Cancelled` once ``cancelled()`` turned true, a :class:`FixportError` the
        job raised, or :class:`WorkerError` when the worker crashed or ran past the timeout.
        """
        job = job_for(request)
        with self._lock:
            if not self.alive:
                self.stop()
                self.start()
            assert self._connection is not None
            try:
                self._connection.send(("job", request))
                return self._wait_for_result(job, progress, cancelled, timeout_s or self.job_timeout_s, partial)
            except (Cancelled, FixportError):
                raise  # the worker is idle again, or was already stopped
            except BaseException:  # Ctrl+C, a failing progress callback: the job's messages would go astray
                self.stop()
                raise

    def _wait_for_result(self, job: Job, progress: ProgressCallback | None, cancelled: CancelCallback | None,
                         timeout_s: float, partial: PartialCallback | None) -> Any:
        assert self._connection is not None and self._process is not None
        deadline = time.monotonic() + timeout_s  # moves on with each progress report: a limit on stalls
        cancel_sent_at: float | None = None
        stage = ""  # the job's last progress message: where it was when a crash came
        while True:
            if cancel_sent_at is None and cancelled is not None and cancelled():
                self._connection.send(("cancel", None))
                cancel_sent_at = time.monotonic()
            if cancel_sent_at is not None and time.monotonic() - cancel_sent_at > CANCEL_GRACE_S:
                self.stop()  # the job does not check for cancel (inside torch, or looping user code)
                raise Cancelled()
            if cancel_sent_at is None and time.monotonic() > deadline:
                self.stop()
                where = f" (last at: {stage})" if stage else ""
                raise WorkerError(f"The worker did not finish '{job.name}': it showed no progress for "
                                  f"{timeout_s:.0f} s{where} and was stopped.",
                                  "A symbolic may loop forever; check the template's code, or raise the timeout.")
            try:
                ready = self._connection.poll(POLL_INTERVAL_S)
                message = self._connection.recv() if ready else None
            except (EOFError, OSError):
                message = None
                ready = True
            if not ready:
                continue
            if message is None and cancel_sent_at is not None:
                self.stop()
                raise Cancelled()
            if message is None:
                self._raise_crash(job, stage)
            kind, payload = message
            if cancel_sent_at is not None:
                if kind in ("progress", "partial"):
                    continue
                raise Cancelled()  # also when the job finished first: the caller no longer wants it
            if kind in ("progress", "partial"):
                deadline = time.monotonic() + timeout_s
            if kind == "progress":
                stage = payload[1] or stage
                if progress is not None:
                    progress(*payload)
            elif kind == "partial" and partial is not None:
                partial(payload)
            elif kind == "result":
                return payload
            elif kind == "error":
                raise payload.to_exception()
            elif kind == "cancelled":  # the job stopped by itself (a worker-side check)
                raise Cancelled()

    def _raise_crash(self, job: Job, stage: str) -> None:
        assert self._process is not None
        try:
            code = self._process.wait(SHUTDOWN_GRACE_S)  # let it finish dying to read its exit code
        except subprocess.TimeoutExpired:
            code = None
        self.stop()
        how = f"exit code {code}"
        if code is not None and code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                pass
        while_doing = f" while {stage}" if stage else ""
        raise WorkerCrashed(f"The export worker crashed running '{job.name}'{while_doing} ({how}).",
                            "Your work is kept. A symbolic, the model's code or torch itself crashed the "
                            "process; a new worker starts automatically.", exit_code=code, stage=stage)


def _picklable(value: Any) -> bool:
    """Whether ``value`` can cross the process boundary (an error's extra field may hold torch objects)."""
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
