"""Fixport: `python main.py` opens the workbench; `python main.py COMMAND ...` runs headless."""
from __future__ import annotations

import sys


def run() -> int:
    if len(sys.argv) == 1 or sys.argv[1] == "gui":
        from gui.app import run_gui

        return run_gui(sys.argv[2:] if len(sys.argv) > 1 else [])
    from core.cli import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
