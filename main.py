"""Fixport: `python main.py` opens the workbench; `python main.py COMMAND ...` runs headless."""
from __future__ import annotations

import sys


def run() -> int:
    """Open the window, or run one command (``fixport`` is this function)."""
    from fixport.core.onnx_io.runtime_check import installed_runtimes, runtime_problem

    installed = installed_runtimes()
    problem = runtime_problem(installed)  # both onnxruntime and onnxruntime-gpu, or neither: say what to run
    if problem:
        print(f"{'warning' if installed else 'error'}: {problem}", file=sys.stderr)
        if not installed:
            return 2
    if len(sys.argv) == 1 or sys.argv[1] == "gui":
        from fixport.gui.app import run_gui

        return run_gui(sys.argv[2:] if len(sys.argv) > 1 else [])
    from fixport.cli.app import main

    return main(sys.argv[1:])


def _run_from_checkout() -> int:
    """`python main.py` in a checkout: the code is importable only as the installed ``fixport``."""
    try:
        from fixport.main import run as installed_run
    except ModuleNotFoundError as error:
        if error.name != "fixport":
            raise
        print("error: Fixport is not installed in this Python.\n"
              "  → Run `bash scripts/run` (it installs Fixport with `pip install -e .`) and try again.",
              file=sys.stderr)
        return 2
    return installed_run()


if __name__ == "__main__":
    sys.exit(_run_from_checkout())
