""""Only the newest request of a topic counts": the bookkeeping the GUI's runners share (no Qt).

Each request gets a serial; issuing a newer one for the same topic makes the older stale, so its
result is dropped and its ``cancelled()`` turns true. Serials are plain ints, read from worker
threads without a lock (an int read is atomic; a stale answer only delays a drop by one check).
"""
from __future__ import annotations

from collections.abc import Hashable

from fixport.core.words.cancel import CancelCallback


class LatestRequests:
    """Serials per topic; ``is_current`` says whether a request is still the newest of its topic."""

    def __init__(self) -> None:
        self._serial = 0
        self._latest: dict[Hashable, int] = {}

    def issue(self, topic: Hashable = "") -> int:
        """A serial for a new request of ``topic``; every older one of that topic is now stale."""
        self._serial += 1
        self._latest[topic] = self._serial
        return self._serial

    def is_current(self, serial: int, topic: Hashable = "") -> bool:
        return self._latest.get(topic) == serial

    def supersede(self, topic: Hashable = "") -> None:
        """Make every request of ``topic`` stale without issuing a new one (closing, clearing)."""
        self.issue(topic)

    def cancel_callback(self, serial: int, topic: Hashable = "") -> CancelCallback:
        """A ``cancelled()`` for long work that turns true once a newer request of ``topic`` exists."""
        return lambda: not self.is_current(serial, topic)
