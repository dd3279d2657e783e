"""scripts/refloor.py on a small tree of old paths: it moves, rewrites, removes second import paths,
and a second run changes nothing (the lead applies it again after merging other branches)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

OLD_TREE = {
    "pyproject.toml": '[project]\nname = "fixport"\n\n[tool.setuptools]\npackages = [\n    "fixport.core.model",\n'
                      '    "fixport.core.script_support",\n]\n',
    "core/__init__.py": "",
    "core/model/__init__.py": "",
    "core/model/graph.py": '"""The graph."""\n\n\nclass Graph:\n    pass\n',
    "core/model/newcomer.py": '"""A module another branch added."""\n',
    "core/model/errors.py": '"""Errors."""\nfrom fixport.core.script_support.errors import FixportError\n\n'
                            '__all__ = ["FixportError", "TraceError"]\n\n\nclass TraceError(FixportError):\n'
                            '    pass\n',
    "core/script_support/__init__.py": "",
    "core/script_support/errors.py": '"""The foundation\'s errors."""\n\n\nclass FixportError(Exception):\n'
                                     '    pass\n',
    "core/loaders/__init__.py": "",
    "core/loaders/shim.py": '"""Only a second path."""\nfrom fixport.core.script_support.errors import FixportError\n'
                            '\n__all__ = ["FixportError"]\n',
    "cli/__init__.py": "",
    "cli/app.py": "from fixport.core.loaders.shim import FixportError\n"
                  "from fixport.core.model.errors import TraceError\n"
                  "from fixport.core.model.graph import Graph\n\nUSED = (FixportError, TraceError, Graph)\n",
    "docs/rooms.md": "The graph is in `core/model/graph.py` (fixport.core.model.graph), support in "
                     "core/script_support/.\n",
}


@pytest.fixture
def old_tree(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for name, text in OLD_TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old"]
    for command in (["init", "-q"], ["add", "-A"], commit):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def _refloor(root: Path) -> str:
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "refloor.py"), "--no-ruff"], cwd=root,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_refloor_moves_rewrites_and_leaves_one_import_path(old_tree: Path) -> None:
    out = _refloor(old_tree)
    assert not (old_tree / "core" / "model").exists() and not (old_tree / "core" / "script_support").exists()
    assert (old_tree / "core/words/graph.py").is_file() and (old_tree / "core/foundation/errors.py").is_file()
    assert (old_tree / "core/words/newcomer.py").is_file() and "core.model.newcomer" in out  # placed, and said
    assert not (old_tree / "core/loaders/shim.py").exists()
    app = (old_tree / "cli/app.py").read_text()
    assert "from fixport.core.foundation.errors import FixportError" in app
    assert "from fixport.core.words.errors import TraceError" in app
    assert "from fixport.core.words.graph import Graph" in app
    assert '__all__ = ["TraceError"]' in (old_tree / "core/words/errors.py").read_text()
    assert (old_tree / "docs/rooms.md").read_text() == (
        "The graph is in `core/words/graph.py` (fixport.core.words.graph), support in core/foundation/.\n")
    packages = (old_tree / "pyproject.toml").read_text()
    assert '"fixport.core.records",\n    "fixport.core.project",' in packages and "core.model" not in packages


def test_refloor_run_again_changes_nothing(old_tree: Path) -> None:
    _refloor(old_tree)
    subprocess.run(["git", "add", "-A"], cwd=old_tree, check=True)
    assert _refloor(old_tree).startswith("moved 0 modules, rewrote 0 files, re-pointed imports in 0, deleted 0")
    unstaged = subprocess.run(["git", "status", "--porcelain"], cwd=old_tree, capture_output=True, text=True,
                              check=True).stdout.split("\n")
    assert [line for line in unstaged if line[1:2].strip() or line.startswith("??")] == []
