"""A tiny typed publish/subscribe hub: handlers subscribe to an event class, emit calls them in order."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

E = TypeVar("E")


class EventHub:
    """Synchronous: ``emit`` returns once every handler ran, on the caller's thread (the window's
    runner hands job results over on the GUI thread, so its docks update there)."""

    def __init__(self) -> None:
        self._handlers: dict[type, list[Callable[[Any], None]]] = {}
        self.history: list[object] | None = None  # every event in order, while record() is on

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        self._handlers.setdefault(event_type, []).append(handler)

    def emit(self, event: object) -> None:
        if self.history is not None:
            self.history.append(event)
        for handler in list(self._handlers.get(type(event), ())):
            handler(event)

    def record(self) -> list[object]:
        """Start keeping every emitted event (for tests and scripts that want the sequence)."""
        self.history = []
        return self.history
