"""What every command prints besides its own report: JSON, and progress on a terminal."""
from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from fixport.core.words.export_dtype import ExportDtype

ProgressPrinter = Callable[[float, str], None]
PROGRESS_WIDTH = 79  # one terminal line: a longer stage name is cut, not wrapped
# The version of every `--json` object a command prints (STYLE #28). Bump it when a key changes
# meaning or goes away; a new key needs no bump (readers ignore keys they do not know).
# 1: the key added, error objects on failure, list outputs wrapped in an object.
JSON_SCHEMA_VERSION = 1
PROGRESS_LINE_LIMIT = 300  # a plain progress line (not a terminal): long enough for a template id and a kind


_printed = [0]  # JSON objects this process printed (main() may run many commands in one process)


def print_json(payload: dict[str, Any]) -> None:
    """One JSON object on stdout, its schema version first; the payload's own keys unchanged."""
    json.dump({"schema_version": JSON_SCHEMA_VERSION, **payload}, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    _printed[0] += 1


def json_objects_printed() -> int:
    """How many JSON objects this process printed so far: a failing command prints its error object
    only where it printed none, so stdout stays one object."""
    return _printed[0]


def print_json_error(command: str, exit_code: int, message: str, hint: str, log: str | None) -> None:
    """What a `--json` run prints when it fails: the same message and hint as stderr, as fields,
    so a CI job parsing stdout gets an object, never an empty string."""
    print_json({"command": command, "status": "error", "exit_code": exit_code,
                "error": {"message": message, "hint": hint, "log": log}})


def progress_printer(as_json: bool, *, lines_otherwise: bool = False) -> ProgressPrinter | None:
    """A one-line progress display on stderr; None when the output is JSON or not a terminal,
    unless ``lines_otherwise``: then one plain line per new message on stderr (a CI log, a pipe;
    stdout keeps the report or the JSON alone)."""
    if as_json or not sys.stderr.isatty():
        return _line_printer() if lines_otherwise else None
    room = PROGRESS_WIDTH - len("[100%] ")
    return lambda fraction, message: print(f"\r[{fraction:4.0%}] {message[:room]:<{room}}", end="", file=sys.stderr)


def _line_printer() -> ProgressPrinter:
    said = [""]

    def line(fraction: float, message: str) -> None:
        if message and message != said[0]:  # the same stage reported again says nothing new
            said[0] = message
            print(f"[{fraction:4.0%}] {message[:PROGRESS_LINE_LIMIT]}", file=sys.stderr, flush=True)
    return line


def clear_progress(as_json: bool) -> None:
    """Blank the progress line, where one was drawn (plain lines are left as they are)."""
    if not as_json and sys.stderr.isatty():
        print("\r" + " " * PROGRESS_WIDTH + "\r", end="", file=sys.stderr)


def print_export_dtype(export_dtype: ExportDtype, width: int = 100) -> None:
    """A checkpoint's export dtype, then one wrapped line per ONNX Runtime provider."""
    first, *providers = export_dtype.lines()
    print(first)
    for line in providers:
        for index, part in enumerate(textwrap.wrap(line, width)):
            print(("  " if index == 0 else "    ") + part)
