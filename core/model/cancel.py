"""Progress and cancel callbacks for long work: plain functions poll these (no Qt here)."""
from __future__ import annotations

from typing import Callable

ProgressCallback = Callable[[float, str], None]  # fraction in [0, 1], short message
CancelCallback = Callable[[], bool]  # True when the caller no longer wants the result


class Cancelled(Exception):
    """Raised inside long work when its caller cancelled it."""


def report(progress: ProgressCallback | None, fraction: float, message: str = "") -> None:
    if progress is not None:
        progress(fraction, message)


def check_cancelled(cancelled: CancelCallback | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled()
