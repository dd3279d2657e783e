"""How the session runs jobs: a port the window's Qt runner fills, and a plain queue for headless use."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fixport.core.foundation.errors import FixportError
from fixport.core.words.cancel import Cancelled
from fixport.core.worker.client import ExportWorker
from fixport.core.worker.jobs import job_for

ResultHandler = Callable[[Any], None]
FailureHandler = Callable[[Any, FixportError], None]  # (request, error)


class JobPort(Protocol):
    """Where the session sends its requests; results come back to the handlers it registers."""

    def submit(self, request: object, topic: str = "") -> Any: ...

    def on_finished(self, request_type: type, handler: ResultHandler) -> None: ...


class QueuedJobs:
    """Runs requests one at a time on an :class:`ExportWorker`, in the caller's thread, when
    :meth:`run_all` is called. As in the window's runner, a newer request of a topic replaces a
    pending one, and results go to one handler per request type."""

    def __init__(self, worker: ExportWorker, on_failed: FailureHandler | None = None) -> None:
        self.worker = worker
        self.on_failed = on_failed
        self._handlers: dict[type, ResultHandler] = {}
        self._pending: list[tuple[str, object]] = []
        self.ran: list[str] = []  # the names of the jobs run, in order

    def on_finished(self, request_type: type, handler: ResultHandler) -> None:
        self._handlers[request_type] = handler

    def submit(self, request: object, topic: str = "") -> object:
        topic = topic or job_for(request).name
        self._pending = [(t, r) for t, r in self._pending if t != topic]
        self._pending.append((topic, request))
        return request

    def run_all(self) -> None:
        """Run every pending request, including those the handlers submit meanwhile."""
        while self._pending:
            _, request = self._pending.pop(0)
            self.ran.append(job_for(request).name)
            try:
                result = self.worker.run(request)
            except Cancelled:
                continue
            except FixportError as error:
                if self.on_failed is None:
                    raise
                self.on_failed(request, error)
                continue
            handler = self._handlers.get(type(request))
            if handler is not None:
                handler(result)
