"""Runs worker jobs off the UI thread; results come back on the GUI thread as signals.

One job at a time goes to the worker process. A new request supersedes a pending one, and a
running job's result is dropped when a newer request of the same kind arrived meanwhile
(the worker stays warm instead of being killed). Cancel kills the worker: the only way to
stop an export that is inside torch.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Signal

from fixport.core.model.cancel import Cancelled
from fixport.core.model.errors import FixportError
from fixport.core.worker.client import ExportWorker


@dataclass
class JobRequest:
    """A named worker job; ``topic`` groups requests where only the newest matters."""

    job: str
    arguments: dict[str, Any] = field(default_factory=dict)
    topic: str = ""
    serial: int = 0


class JobRunner(QObject):
    """The GUI's single runner for long work."""

    started = Signal(object)  # JobRequest
    progress = Signal(object, float, str)  # JobRequest, fraction, message
    finished = Signal(object, object)  # JobRequest, result
    failed = Signal(object, object)  # JobRequest, FixportError
    cancelled = Signal(object)  # JobRequest
    busy_changed = Signal(bool)

    def __init__(self, worker: ExportWorker | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._owns_worker = worker is None  # a borrowed worker (tests) outlives the window
        self.worker = worker or ExportWorker()
        self._serial = 0
        self._latest_serial: dict[str, int] = {}
        self._pending: list[JobRequest] = []
        self._running: JobRequest | None = None
        self._cancel_flag = threading.Event()
        self._relay.connect(self._on_relay)

    @property
    def busy(self) -> bool:
        return self._running is not None

    def warm_up(self) -> None:
        """Start the worker process now, so the first real job does not pay for imports."""
        self.submit("ping", topic="ping")

    def submit(self, job: str, topic: str = "", **arguments: Any) -> JobRequest:
        self._serial += 1
        request = JobRequest(job, arguments, topic or job, self._serial)
        self._latest_serial[request.topic] = request.serial
        self._pending = [p for p in self._pending if p.topic != request.topic]
        self._pending.append(request)
        self._start_next()
        return request

    def cancel(self) -> None:
        """Stop the running job (kills the worker; the next job starts a new one)."""
        self._pending.clear()
        if self._running is not None:
            self._cancel_flag.set()

    def shutdown(self) -> None:
        self.cancel()
        if self._owns_worker:
            self.worker.stop()

    def is_current(self, request: JobRequest) -> bool:
        return self._latest_serial.get(request.topic) == request.serial

    def _start_next(self) -> None:
        if self._running is not None or not self._pending:
            return
        request = self._pending.pop(0)
        self._running = request
        self._cancel_flag.clear()
        self.busy_changed.emit(True)
        self.started.emit(request)
        threading.Thread(target=self._run, args=(request,), daemon=True, name=f"fixport-{request.job}").start()

    def _run(self, request: JobRequest) -> None:
        def report(fraction: float, message: str) -> None:
            try:
                self._relay.emit(("progress", request, (fraction, message)))
            except RuntimeError:
                pass

        try:
            result = self.worker.run(request.job, progress=report, cancelled=self._cancel_flag.is_set,
                                     **request.arguments)
            outcome = ("finished", request, result)
        except Cancelled:
            outcome = ("cancelled", request, None)
        except FixportError as exc:
            outcome = ("failed", request, exc)
        except Exception as exc:  # a bug must not kill the runner thread silently
            outcome = ("failed", request, FixportError(f"{type(exc).__name__}: {exc}", "See the Log."))
        try:
            self._relay.emit(outcome)
        except RuntimeError:  # the window closed while the job ran: nobody wants the result
            pass

    # Signals emitted from the worker thread are queued to this object's (the GUI) thread.
    _relay = Signal(object)

    def _on_relay(self, outcome: tuple[str, JobRequest, Any]) -> None:
        kind, request, payload = outcome
        if kind == "progress":
            self.progress.emit(request, *payload)
            return
        self._running = None
        if kind == "finished" and self.is_current(request):
            self.finished.emit(request, payload)
        elif kind == "failed" and self.is_current(request):
            self.failed.emit(request, payload)
        elif kind == "cancelled":
            self.cancelled.emit(request)
        self._start_next()
        if self._running is None:  # a handler above may already have started the next job
            self.busy_changed.emit(False)
