"""What every command prints besides its own report: JSON, and progress on a terminal."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

ProgressPrinter = Callable[[float, str], None]
PROGRESS_WIDTH = 79  # one terminal line: a longer stage name is cut, not wrapped


def print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def progress_printer(as_json: bool) -> ProgressPrinter | None:
    """A one-line progress display on stderr; None when the output is JSON or not a terminal."""
    if as_json or not sys.stderr.isatty():
        return None
    room = PROGRESS_WIDTH - len("[100%] ")
    return lambda fraction, message: print(f"\r[{fraction:4.0%}] {message[:room]:<{room}}", end="", file=sys.stderr)


def clear_progress(as_json: bool) -> None:
    """Blank the progress line, where one was drawn."""
    if not as_json and sys.stderr.isatty():
        print("\r" + " " * PROGRESS_WIDTH + "\r", end="", file=sys.stderr)
