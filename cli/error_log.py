"""Each command's own error log: ``~/.cache/fixport/error-<time>-<pid>.log``, so the log read after
a failure is that run's, never another process's. ``last-error.log`` beside it is a copy of the
newest, and only the newest :data:`KEPT_ERROR_LOGS` run logs are kept."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from fixport.core.words.internal_error import InternalError

ERROR_LOG_DIR = Path.home() / ".cache" / "fixport"
LATEST_ERROR_LOG_NAME = "last-error.log"  # a copy of the newest run's log, for people who look there
RUN_LOG_PATTERN = "error-*.log"
KEPT_ERROR_LOGS = 50


def run_log_path(folder: Path | None = None) -> Path:
    """This process's log file: error-20261127-150811-123-4242.log (local time, milliseconds, pid)."""
    now = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"
    return (folder or ERROR_LOG_DIR) / f"error-{stamp}-{os.getpid()}.log"


def write_error_log(text: str, folder: Path | None = None) -> Path | None:
    """Write ``text`` to a new log of this run's own (and its copy ``last-error.log``); the path,
    or None where the folder cannot be written."""
    folder = folder or ERROR_LOG_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = _new_file(run_log_path(folder))
        path.write_text(text, encoding="utf-8")
    except OSError:
        return None
    try:
        (folder / LATEST_ERROR_LOG_NAME).write_text(text, encoding="utf-8")
    except OSError:
        pass  # the run's own log is written; the shared copy is a convenience
    prune_error_logs(folder, keep=path)
    return path


def _new_file(path: Path) -> Path:
    """``path``, or ``name-2.log``, ``name-3.log``… where it exists: created here, never reused."""
    for attempt in range(1, 100):
        candidate = path if attempt == 1 else path.with_name(f"{path.stem}-{attempt}{path.suffix}")
        try:
            candidate.open("x").close()
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(path)


def prune_error_logs(folder: Path, keep: Path) -> None:
    """Delete all but the newest :data:`KEPT_ERROR_LOGS` run logs (never ``keep``)."""
    logs = sorted(folder.glob(RUN_LOG_PATTERN), key=_modified, reverse=True)
    for old in logs[KEPT_ERROR_LOGS:]:
        if old != keep:
            try:
                old.unlink()
            except OSError:
                pass  # another run pruned it first, or it is not ours to delete


def _modified(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def report_internal_errors(errors: list[InternalError], folder: Path | None = None) -> None:
    """Each step a job did without because of a Fixport bug, on stderr as a bug (never as a note on the
    model), its traceback in this run's log file, whose path is printed."""
    for error in errors:
        print(f"error: {error.sentence()}", file=sys.stderr)
        path = write_error_log(f"Fixport bug in the {error.step}: {error.error}\n\n{error.details}", folder)
        if path is not None:
            print(f"  (the details are in {path})", file=sys.stderr)
