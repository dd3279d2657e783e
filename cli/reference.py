"""The command-line reference (docs/cli.md), written from the argument parsers themselves.

    python -m fixport.cli.reference --write     # regenerate docs/cli.md

tests/test_docs.py fails when docs/cli.md differs from what the parsers say, so the page cannot
disagree with ``--help``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REFERENCE_PATH = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
HELP_WIDTH = "100"  # argparse wraps at the terminal's width: fixed, so the page is the same everywhere


def python_version() -> str:
    """argparse's layout changes between Python versions: the page says which one wrote it."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def cli_reference_markdown() -> str:
    """Every command's ``--help``, in the order `python main.py --help` lists them."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        from fixport.cli.app import build_parser

        parser = build_parser()
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sections = [("python main.py", parser.format_help())]
        sections += [(f"python main.py {name}", sub.format_help()) for name, sub in commands.choices.items()]
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    lines = ["# Command-line reference", "",
             "Generated from the argument parsers by `python -m fixport.cli.reference --write` "
             f"(Python {python_version()}); the tests fail when this page and `--help` differ.", ""]
    for title, text in sections:
        lines += [f"## `{title}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = cli_reference_markdown()
    if "--write" in argv:
        REFERENCE_PATH.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {REFERENCE_PATH}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
