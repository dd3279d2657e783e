"""The GUI and CLI processes never import torch: it costs seconds of start-up, and everything
that needs it runs in the export worker."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_window_and_command_line_modules_do_not_import_torch() -> None:
    """Every module of the two front ends, imported for real (the import contracts check it statically)."""
    code = ("import importlib, pkgutil, sys\n"
            "import fixport.cli, fixport.gui\n"
            "for package in (fixport.cli, fixport.gui):\n"
            "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "        importlib.import_module(module.name)\n"
            "from fixport.cli.app import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('torch', 'torchvision', 'onnxscript') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
