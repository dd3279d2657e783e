"""The headless command line: ``python main.py <command>``. Every GUI action is reachable here."""
from __future__ import annotations

import argparse
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from fixport.cli.arguments import COMMANDS, EXIT_ERROR, GUI_LOG_HINT, refuse_overwriting_inputs
from fixport.cli.error_log import write_error_log
from fixport.cli.output import json_objects_printed, print_json_error
from fixport.cli.workers import lending_worker
from fixport.core.foundation.errors import FixportError
from fixport.core.words.errors import MAX_PRINTED_MESSAGE_CHARS, WorkerError, trimmed_message
from fixport.core.worker.client import DEFAULT_JOB_TIMEOUT_S, ExportWorker

COMMAND_ORDER = ("check", "export", "compare", "fix", "script", "templates", "sweep")


class UsageError(Exception):
    """A command line argparse refuses: its message, already in argparse's words."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser (and, through add_subparsers, each command's), whose usage errors come
    back to main() as a :class:`UsageError` instead of exiting, so --json can print them too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    from fixport.cli import check_export, compare, fixing, sweep  # noqa: F401  (importing registers the commands)

    parser = _Parser(prog="python main.py", description=(
        "Fixport: find and fix what torch.onnx.export cannot handle. "
        "Without a command, the workbench window opens on a built-in example."))
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    # The commands register as their modules are imported, and a caller may have imported one first:
    # --help lists them in the workflow's order, whatever that order was.
    ordered = sorted(COMMANDS.items(), key=lambda item: COMMAND_ORDER.index(item[0])
                     if item[0] in COMMAND_ORDER else len(COMMAND_ORDER))
    for name, (help_text, configure, handler) in ordered:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        configure(sub)
        sub.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None, worker: ExportWorker | None = None) -> int:
    """Run one command. Every failure prints what failed and what to do; tracebacks go to the log.

    ``worker``: a warm worker to run the command's job on (left running), instead of a fresh process.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as refused:
        print(refused, file=sys.stderr)
        _usage_error_json(list(sys.argv[1:] if argv is None else argv), str(refused))
        return EXIT_ERROR
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return EXIT_ERROR
    with _interrupt_on_sigterm(), lending_worker(worker):
        return _run_command(args)


def _run_command(args: argparse.Namespace) -> int:
    """The command's handler, with every failure turned into a message and an exit code (and, under
    --json, into one JSON object on stdout: a CI job parsing it never gets an empty string)."""
    printed_before = json_objects_printed()
    try:
        refuse_overwriting_inputs(args)
        return args.handler(args)
    except FixportError as exc:
        message, hint = _in_command_line_terms(exc, args)
        log = _print_error(message, hint, exc.details)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        message, hint, log = "interrupted", "The command was stopped (Ctrl+C or SIGTERM) before it finished.", None
    except OSError as exc:  # a file the system refused us: the user's to fix, not a bug of ours
        message = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
        hint = "Check the path and its permissions, then try again."
        log = _print_error(message, hint, traceback.format_exc())
    except Exception as exc:  # a bug of ours: a clear line for the user, the traceback in the log
        message = f"unexpected {type(exc).__name__}: {exc}"
        hint = "This is a Fixport bug; please report it with the log file below."
        log = _print_error(message, hint, traceback.format_exc())
    # sweep's --json names a file: its stdout is not JSON. A command that failed after printing its
    # report (check --write-changed) keeps that one object on stdout.
    if getattr(args, "json", None) is True and json_objects_printed() == printed_before:
        print_json_error(args.command, EXIT_ERROR, trimmed_message(message, MAX_PRINTED_MESSAGE_CHARS), hint,
                         None if log is None else str(log))
    return EXIT_ERROR


def _usage_error_json(argv: list[str], message: str) -> None:
    """A command line argparse refused, as --json's error object, where it asked for JSON on stdout."""
    command = next((word for word in argv if word in COMMANDS), "")
    if "--json" in argv and command != "sweep":  # sweep's --json names a file
        help_command = " ".join(word for word in ("python main.py", command, "--help") if word)
        print_json_error(command, EXIT_ERROR, message, f"See `{help_command}`.", None)


@contextmanager
def _interrupt_on_sigterm() -> Iterator[None]:
    """`kill PID` stops a command like Ctrl+C does: the running job's worker is stopped on the way out.
    The caller's own handler is back afterwards (main() may run inside a test or a tool)."""
    def interrupt(_signal: int, _frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _in_command_line_terms(exc: FixportError, args: argparse.Namespace) -> tuple[str, str]:
    """The message and hint in command-line words: no window parts, the flag that raises a limit,
    and what user code that exits means (the worker reports it as a bare "SystemExit: 5")."""
    message = exc.message
    hint = exc.hint.replace(GUI_LOG_HINT, "").replace("the Log", "the log file").strip()
    if isinstance(exc, WorkerError) and "did not finish" in message:
        limit = getattr(args, "timeout", DEFAULT_JOB_TIMEOUT_S)
        hint = (f"The limit is {limit:g} s without progress (default {DEFAULT_JOB_TIMEOUT_S:g} s). A build(), "
                "forward() or fix that loops is the usual cause; if one step of the model is just slow, raise the "
                "limit with --timeout SECONDS.")
    elif message.startswith("SystemExit:"):
        code = message.partition(":")[2].strip() or "None"
        message = f"The model's code or one of its fixes called sys.exit({code}) during the job."
        hint = "Code that Fixport runs (build(), forward(), a fix) must not exit; raise an exception instead."
    return message, hint


def _print_error(message: str, hint: str, details: str) -> Path | None:
    """The message (trimmed: an exporter's error can hold a whole graph) and what to do on stderr;
    the full message and the details in this run's own log, whose path is printed and returned."""
    shown = trimmed_message(message, MAX_PRINTED_MESSAGE_CHARS)
    print(f"error: {shown}", file=sys.stderr)
    if hint:
        print(f"  → {hint}", file=sys.stderr)
    path = None
    if details or shown != message:
        path = write_error_log(f"error: {message}\n{f'hint: {hint}' if hint else ''}\n\n{details}")
        if path is not None:
            print(f"  (the details are in {path})", file=sys.stderr)
    return path
