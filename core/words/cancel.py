"""Progress and cancel callbacks for long work: plain functions poll these (no Qt here)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

ProgressCallback = Callable[[float, str], None]  # fraction in [0, 1], short message
CancelCallback = Callable[[], bool]  # True when the caller no longer wants the result
PartialCallback = Callable[[Any], None]  # an early piece of the result, e.g. the traced graph


class Cancelled(Exception):
    """Raised inside long work when its caller cancelled it."""


def report(progress: ProgressCallback | None, fraction: float, message: str = "") -> None:
    if progress is not None:
        progress(fraction, message)


def within(progress: ProgressCallback | None, fraction: float, doing: str) -> ProgressCallback | None:
    """A step's own progress inside a larger one: every message as "``doing``: message", at ``fraction``
    (a nested step's fractions would move the caller's bar backwards)."""
    if progress is None:
        return None
    return lambda _fraction, message: progress(fraction, f"{doing}: {message}" if message else doing)


def report_partial(progress: ProgressCallback | None, piece: Any) -> None:
    """Hand an early piece of the result to a caller that takes one (the worker's progress has
    a ``partial`` method); other callers wait for the whole result."""
    send = getattr(progress, "partial", None)
    if send is not None:
        send(piece)


def check_cancelled(cancelled: CancelCallback | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled()
