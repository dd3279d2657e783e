"""The docs say what the code does: the command-line reference is the parsers' own --help."""
from __future__ import annotations

import re

import pytest

from fixport.cli.reference import REFERENCE_PATH, cli_reference_markdown, python_version


def test_the_cli_reference_is_what_the_parsers_say() -> None:
    written = REFERENCE_PATH.read_text(encoding="utf-8")
    made_with = re.search(r"\(Python (\d+\.\d+)\)", written)
    if made_with and made_with.group(1) != python_version():
        pytest.skip(f"docs/cli.md was written with Python {made_with.group(1)}; argparse lays help out differently")
    assert written == cli_reference_markdown(), "run `python -m fixport.cli.reference --write`"
    for command in ("check", "export", "compare", "fix", "script", "templates"):
        assert f"## `python main.py {command}`" in written
