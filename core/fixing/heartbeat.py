"""Progress while an in-process step blocks: "still <doing> (N s)" every few seconds.

Steps of the fix search that run in the worker's own process (the trace that captures the values
flowing into the failing nodes, a torch.export capture of a large model) can take a minute without
a word. A daemon thread reports for them, as :mod:`fixport.core.fixing.isolation`'s waiting parent
does for a trial in a child, so the user sees a line at least every 10 s.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fixport.core.fixing.isolation import HEARTBEAT_S
from fixport.core.words.cancel import ProgressCallback, report


@contextmanager
def reporting_while(progress: ProgressCallback | None, fraction: float, doing: str) -> Iterator[None]:
    """Report ``doing`` now and "still ``doing`` (N s)" every HEARTBEAT_S until the block ends."""
    report(progress, fraction, doing)
    if progress is None:
        yield
        return
    done, started = threading.Event(), time.monotonic()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            report(progress, fraction, f"still {doing} ({time.monotonic() - started:.0f} s)")

    beating = threading.Thread(target=beat, name="fixport-heartbeat", daemon=True)
    beating.start()
    try:
        yield
    finally:
        done.set()
        beating.join()  # no report from it after the block: the caller's next message comes last
