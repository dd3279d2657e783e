"""The GUI and CLI processes never import torch: it costs seconds of start-up, and everything
that needs it runs in the export worker."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

LIGHT_MODULES = ["gui.main_window", "gui.app", "core.cli", "core.cli_commands", "core.cli_project",
                 "core.cli_compare", "core.workbench", "core.fix_script", "core.job_types", "core.compare_result"]


def test_window_and_command_line_modules_do_not_import_torch() -> None:
    code = ("import importlib, sys\n"
            f"for name in {LIGHT_MODULES!r}:\n    importlib.import_module(name)\n"
            "from core.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('torch', 'torchvision', 'onnxscript') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
