"""Runs worker jobs off the UI thread; results come back on the GUI thread, to one handler per job.

One job at a time goes to the worker process. A new request supersedes a pending one of the same
topic, and a running job's result is dropped when a newer request of its topic arrived meanwhile
(the worker stays warm instead of being killed). Cancel asks the job to stop; the worker is
killed only when the job does not stop within the client's grace (see ``core/worker/client.py``).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from fixport.core.foundation.errors import FixportError
from fixport.core.records.requests import PingRequest
from fixport.core.words.cancel import Cancelled
from fixport.core.worker.client import ExportWorker
from fixport.core.worker.jobs import Job, job_for, job_for_type
from fixport.gui.latest import LatestRequests


@dataclass
class SubmittedJob:
    """A typed request on its way through the runner; ``topic`` groups requests where only the newest matters."""

    request: Any
    job: Job
    topic: str
    serial: int


class JobRunner(QObject):
    """The GUI's single runner for long work."""

    started = Signal(object)  # SubmittedJob
    progress = Signal(object, float, str)  # SubmittedJob, fraction, message
    partial = Signal(object, object)  # SubmittedJob, an early piece of the result (e.g. TracedGraph)
    finished = Signal(object, object)  # SubmittedJob, result (then the job's handler runs)
    failed = Signal(object, object)  # SubmittedJob, FixportError
    cancelled = Signal(object)  # SubmittedJob
    busy_changed = Signal(bool)

    def __init__(self, worker: ExportWorker | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._owns_worker = worker is None  # a borrowed worker (tests) outlives the window
        self.worker = worker or ExportWorker()
        self._latest = LatestRequests()
        self._handlers: dict[type, Callable[[Any], None]] = {}
        self._pending: list[SubmittedJob] = []
        self._running: SubmittedJob | None = None
        self._cancel_flag = threading.Event()
        self._shut_down = False
        self._relay.connect(self._on_relay)

    @property
    def busy(self) -> bool:
        return self._running is not None

    def on_finished(self, request_type: type, handler: Callable[[Any], None]) -> None:
        """Call ``handler(result)`` on the GUI thread when the newest job for ``request_type`` finishes."""
        job_for_type(request_type)  # a TypeError now for a type that is not a worker request
        self._handlers[request_type] = handler

    def warm_up(self) -> None:
        """Start the worker process now, so the first real job does not pay for imports."""
        self.submit(PingRequest())

    def submit(self, request: object, topic: str = "") -> SubmittedJob:
        """Queue ``request`` (its type picks the job); ``topic`` defaults to the job's name."""
        job = job_for(request)
        topic = topic or job.name
        submitted = SubmittedJob(request, job, topic, self._latest.issue(topic))
        self._pending = [p for p in self._pending if p.topic != topic]
        self._pending.append(submitted)
        self._start_next()
        return submitted

    def cancel(self) -> None:
        """Stop the running job and drop the pending ones (each reported as cancelled: a job
        waiting behind a short one, say the warm-up, is what the user meant to stop)."""
        dropped, self._pending = self._pending, []
        if self._running is not None:
            self._cancel_flag.set()
        for submitted in dropped:
            self.cancelled.emit(submitted)

    def shutdown(self) -> None:
        """Stop for good: the running job's outcome, when it comes, reaches no one (its window is
        gone, and a signal into deleted widgets would raise in the event loop)."""
        self.cancel()
        self._shut_down = True
        if self._owns_worker:
            self.worker.stop()

    def is_current(self, submitted: SubmittedJob) -> bool:
        return self._latest.is_current(submitted.serial, submitted.topic)

    def _start_next(self) -> None:
        if self._shut_down or self._running is not None or not self._pending:
            return
        submitted = self._pending.pop(0)
        self._running = submitted
        self._cancel_flag.clear()
        # The job goes to the worker first: the UI's reaction to `started` (showing the progress
        # bar re-lays out the status bar) then overlaps the worker's time instead of adding to it.
        threading.Thread(target=self._run, args=(submitted,), daemon=True,
                         name=f"fixport-{submitted.job.name}").start()
        self.busy_changed.emit(True)
        self.started.emit(submitted)

    def _run(self, submitted: SubmittedJob) -> None:
        def report(fraction: float, message: str) -> None:
            try:
                self._relay.emit(("progress", submitted, (fraction, message)))
            except RuntimeError:
                pass

        def hand_on(piece: Any) -> None:
            try:
                self._relay.emit(("partial", submitted, piece))
            except RuntimeError:
                pass

        try:
            result = self.worker.run(submitted.request, progress=report, cancelled=self._cancel_flag.is_set,
                                     partial=hand_on)
            outcome = ("finished", submitted, result)
        except Cancelled:
            outcome = ("cancelled", submitted, None)
        except FixportError as exc:
            outcome = ("failed", submitted, exc)
        except Exception as exc:  # a bug must not kill the runner thread silently
            outcome = ("failed", submitted, FixportError(f"{type(exc).__name__}: {exc}", "See the Log."))
        try:
            self._relay.emit(outcome)
        except RuntimeError:  # the window closed while the job ran: nobody wants the result
            pass

    # Signals emitted from the worker thread are queued to this object's (the GUI) thread.
    _relay = Signal(object)

    def _on_relay(self, outcome: tuple[str, SubmittedJob, Any]) -> None:
        kind, submitted, payload = outcome
        if self._shut_down:
            if kind not in ("progress", "partial"):
                self._running = None
            return
        if kind == "progress":
            self.progress.emit(submitted, *payload)
            return
        if kind == "partial":
            if self.is_current(submitted):
                self.partial.emit(submitted, payload)
            return
        self._running = None
        if kind == "finished" and self.is_current(submitted):
            handler = self._handlers.get(type(submitted.request))
            try:
                if handler is not None:  # first: the result on screen before the progress bar goes
                    handler(payload)
            finally:
                self.finished.emit(submitted, payload)
        elif kind == "failed" and self.is_current(submitted):
            self.failed.emit(submitted, payload)
        elif kind == "cancelled":
            self.cancelled.emit(submitted)
        self._start_next()
        if self._running is None:  # a handler above may already have started the next job
            self.busy_changed.emit(False)
