"""Qt stays in gui/: core/ and symbolics/ import neither PySide6 nor pyqtgraph."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QT_MODULES = ("PySide6", "pyqtgraph", "gui")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_qt_imports_in_core_or_symbolics_source() -> None:
    offenders = [str(path.relative_to(REPO)) for folder in ("core", "symbolics")
                 for path in (REPO / folder).rglob("*.py") if _imported_modules(path) & set(QT_MODULES)]
    assert offenders == []


def test_importing_all_of_core_loads_no_qt() -> None:
    modules = sorted(f"core.{p.stem}" for p in (REPO / "core").glob("*.py") if p.stem != "__init__")
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n    importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
