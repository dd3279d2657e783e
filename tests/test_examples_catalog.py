"""The example corpus parses and declares valid metadata; runs without torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from fixport.examples import catalog  # conftest.py puts the repo root on sys.path

REPO_ROOT = Path(__file__).resolve().parents[1]

EXAMPLE_FILES = sorted(
    p for p in catalog.EXAMPLES_DIR.glob("*.py") if p.stem not in catalog.NOT_EXAMPLES
)
ALLOWED_IMPORTS = {"__future__", "torch", "torchvision", "numpy", "onnxscript"}


def test_corpus_is_not_empty() -> None:
    assert len(EXAMPLE_FILES) >= 10


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_file_parses_and_defines_build(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert catalog.defines_function(tree, "build")
    assert ast.get_docstring(tree), f"{path.name} needs a module docstring"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_imports_only_allowed_packages(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots <= ALLOWED_IMPORTS, f"{path.name} imports {roots - ALLOWED_IMPORTS}"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_metadata_is_valid(path: Path) -> None:
    info = catalog.read_example(path)
    assert info.name == path.stem
    for entry in info.expected_unsupported:
        assert entry["reason"] in catalog.VALID_REASONS
        assert (entry["kind"] == "prim::PythonOp") == (entry["reason"] == "python_op")


def test_list_examples_is_sorted_and_complete() -> None:
    infos = catalog.list_examples()
    names = [info.name for info in infos]
    assert names == sorted(names)
    assert names == [p.stem for p in EXAMPLE_FILES]


def test_example_path_finds_known_and_rejects_unknown() -> None:
    name = EXAMPLE_FILES[0].stem
    assert catalog.example_path(name) == EXAMPLE_FILES[0]
    for bad in ("no_such_example", "catalog", "__init__", "../tests/x"):
        with pytest.raises(KeyError):
            catalog.example_path(bad)


def test_bad_reason_is_rejected(tmp_path: Path) -> None:
    source = (
        "FIXPORT_EXAMPLE = {'title': 't', 'description': 'd', 'opset': 12,\n"
        " 'export_options': {}, 'fix_tolerance': 1e-4,\n"
        " 'expected_unsupported': [{'kind': 'aten::x', 'reason': 'broken', 'count': 1}]}\n"
        "def build():\n    pass\n"
    )
    (tmp_path / "bad.py").write_text(source)
    with pytest.raises(catalog.ExampleFormatError, match="reason"):
        catalog.list_examples(tmp_path)


def test_missing_build_is_rejected(tmp_path: Path) -> None:
    source = (
        "FIXPORT_EXAMPLE = {'title': 't', 'description': 'd', 'opset': 12,\n"
        " 'export_options': {}, 'fix_tolerance': 1e-4, 'expected_unsupported': []}\n"
    )
    (tmp_path / "nobuild.py").write_text(source)
    with pytest.raises(catalog.ExampleFormatError, match="build"):
        catalog.list_examples(tmp_path)


def test_listing_does_not_import_torch() -> None:
    code = (
        "import sys; from examples import catalog; catalog.list_examples(); "
        "assert 'torch' not in sys.modules, 'catalog imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)
