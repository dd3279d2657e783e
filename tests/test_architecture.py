"""The house rules: the rooms' import contracts hold, and an install puts one package in site-packages."""
from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from tests.conftest import REPO

PACKAGE_FOLDERS = ("cli", "core", "examples", "gui", "symbolics")


def test_import_contracts_hold() -> None:
    """pyproject.toml's [tool.importlinter] contracts: Qt only in gui/, torch never in the front ends."""
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    result = subprocess.run([sys.executable, "-c", code, "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists packages by hand (the root is mapped to `fixport`): none may be missing."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"fixport"} | {
        "fixport." + ".".join(init.parent.relative_to(REPO).parts)
        for folder in PACKAGE_FOLDERS for init in (REPO / folder).rglob("__init__.py")}
    assert found == listed


def test_the_wheel_installs_one_top_level_package(tmp_path: Path) -> None:
    """Nothing called core, gui or main lands at the top of site-packages."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "--wheel-dir", str(tmp_path), str(REPO)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("fixport-*.whl"))
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"fixport"}
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in zipfile.ZipFile(wheel).namelist()
                                                     if n.endswith("entry_points.txt"))).decode()
    assert "fixport = fixport.main:run" in entry_points
