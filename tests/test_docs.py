"""The docs say what the code does: the command-line reference is the parsers' own --help, the site
builds with every page and link, and the figures come from the bench scripts."""
from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from fixport.cli.reference import REFERENCE_PATH, cli_reference_markdown, python_version

REPO = Path(__file__).resolve().parent.parent


def test_the_cli_reference_is_what_the_parsers_say() -> None:
    written = REFERENCE_PATH.read_text(encoding="utf-8")
    made_with = re.search(r"\(Python (\d+\.\d+)\)", written)
    if made_with and made_with.group(1) != python_version():
        pytest.skip(f"docs/cli.md was written with Python {made_with.group(1)}; argparse lays help out differently")
    assert written == cli_reference_markdown(), "run `python -m fixport.cli.reference --write`"
    for command in ("check", "export", "compare", "fix", "script", "templates"):
        assert f"## `python main.py {command}`" in written


def test_the_site_builds_with_every_page_in_the_nav_and_every_link_resolving(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken link or anchor, or a page missing from mkdocs.yml's nav, fails."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "writing-a-fix" / "index.html").is_file()


def _headings_slugs(markdown_path: Path) -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", markdown_path.read_text(encoding="utf-8"), re.M)
    return {slugify(heading, "-") for heading in headings}


def test_every_relative_link_in_the_readme_resolves() -> None:
    readme = REPO / "README.md"
    targets = re.findall(r"\]\(([^)\s]+)\)", readme.read_text(encoding="utf-8"))
    relative = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert relative, "the README links to no page"
    for target in relative:
        path_text, _, anchor = target.partition("#")
        path = (REPO / path_text).resolve() if path_text else readme
        assert path.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in _headings_slugs(path), f"README.md links to {target}: no such heading"


def test_the_benchmark_pages_are_files_a_bench_script_wrote() -> None:
    pages = sorted((REPO / "docs" / "benchmarks").glob("*.md"))
    assert pages
    for page in pages:
        opening = page.read_text(encoding="utf-8").splitlines()[:3]  # the stamp, under a title where the page has one
        assert any(line.startswith("_Generated ") for line in opening), f"{page.name} has no bench stamp"
        assert json.loads(page.with_suffix(".json").read_text(encoding="utf-8"))["stamp"]["commit"]


# A figure with a unit of time, memory, ratio or share, or an error in scientific notation.
MEASUREMENT = re.compile(r"\b\d+(\.\d+)?\s?(s|ms|min|GB|MB|GiB|MiB|%)(?!\w)"
                         r"|\b\d+(\.\d+)?\s?[x×](?!\w)|\b\d\.\d+e[-+]\d+")


def test_no_table_of_measurements_is_typed_by_hand() -> None:
    """Tables of figures belong to docs/benchmarks/, written by the bench scripts."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("|") and (found := MEASUREMENT.search(line)):
                raise AssertionError(f"{page.name}:{number}: {found.group(0)!r} in a table: "
                                     "write it from a bench script")


# Names the docstrings use as examples, and files of other projects named without their folder
EXAMPLE_FILE_NAMES = {"file.py", "model.py", "m.py", "_compat.py", "_common.py"}
OTHER_PROJECTS = ("torch/", "onnxscript/", "onnx/", "transformers/", "onnxruntime/")
NAMED_FILE = re.compile(r"(?<![\w./-])([\w./-]*\w\.py)\b")


def _docstrings_and_comments(path: Path) -> list[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    found = [(getattr(node, "lineno", 1), ast.get_docstring(node, clean=False) or "")
             for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
    return found + [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(source).readline)
                    if token.type == tokenize.COMMENT]


def missing_files_named(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Every ``x.py`` or ``folder/x.py`` a docstring or comment names, that the tree lacks."""
    names = {path.name for path in root.rglob("*.py")}
    missing = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for line, text in _docstrings_and_comments(path):
                for named in NAMED_FILE.findall(text):
                    named = named.lstrip("./")
                    if "/" in named:
                        known = named.startswith(OTHER_PROJECTS) or any(
                            (base / named).exists() for base in (root, path.parent))
                    else:
                        known = named in names or named in EXAMPLE_FILE_NAMES
                    if not known:
                        missing.append(f"{path.relative_to(root)}:{line}: {named}")
    return missing


def test_every_file_a_docstring_names_exists() -> None:
    """A module moved or renamed takes its mentions with it: no docstring or comment names a file that is gone."""
    assert missing_files_named(REPO, ("core", "gui", "cli", "symbolics")) == []


def test_the_named_file_check_sees_gone_files(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "here.py").write_text('"""See ``core/here.py`` and gone.py."""\n# and core/old/gone.py\n')
    assert missing_files_named(tmp_path, ("core",)) == ["core/here.py:1: gone.py", "core/here.py:2: core/old/gone.py"]
