"""Index of the example model corpus, read without importing torch.

Each example file defines ``build()`` and a plain-data ``FIXPORT_EXAMPLE`` dict. This module
parses the files with :mod:`ast` and evaluates only that dict with :func:`ast.literal_eval`,
so listing the gallery is fast and never runs model code.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from fixport.core.exporters.profiles import PROFILES
from fixport.core.words.vocabulary import ProblemReason

EXAMPLES_DIR = Path(__file__).resolve().parent
METADATA_NAME = "FIXPORT_EXAMPLE"
BUILD_FUNCTION_NAME = "build"
NOT_EXAMPLES = frozenset({"__init__", "catalog"})
EXAMPLE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")

# Why a node fails; the strings are part of the file format. A python_op entry has "name".
VALID_REASONS = tuple(reason.value for reason in ProblemReason)
DYNAMO_EXPECTED_KEY = "expected_unsupported_dynamo"  # optional: the dynamo exporter's findings
REQUIRED_KEYS = ("title", "description", "opset", "export_options", "expected_unsupported",
                 "fix_tolerance")


class ExampleFormatError(ValueError):
    """An example file does not follow the model-file contract."""


@dataclass(frozen=True)
class ExampleInfo:
    """Metadata of one example model file."""

    name: str
    path: Path
    title: str
    description: str
    opset: int
    export_options: dict[str, Any] = field(default_factory=dict)
    expected_unsupported: list[dict[str, Any]] = field(default_factory=list)
    fix_tolerance: float = 1e-4
    notes: str = ""
    # What `check --exporter dynamo` must report; None: the example makes no claim for that exporter.
    expected_unsupported_dynamo: list[dict[str, Any]] | None = None


def list_examples(directory: Path | None = None) -> list[ExampleInfo]:
    """Return every example in ``directory`` (default: this package), sorted by name."""
    folder = EXAMPLES_DIR if directory is None else Path(directory)
    paths = [p for p in folder.glob("*.py") if p.stem not in NOT_EXAMPLES and not p.stem.startswith("_")]
    return [read_example(p) for p in sorted(paths, key=lambda p: p.stem)]


def example_path(name: str, directory: Path | None = None) -> Path:
    """Return the file of example ``name``; raise KeyError if there is none."""
    folder = EXAMPLES_DIR if directory is None else Path(directory)
    path = folder / f"{name}.py"
    if name in NOT_EXAMPLES or not EXAMPLE_NAME_PATTERN.match(name) or not path.is_file():
        raise KeyError(f"no example named {name!r} in {folder}")
    return path


def read_example(path: Path) -> ExampleInfo:
    """Parse one example file and validate its metadata."""
    path = Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if not defines_function(tree, BUILD_FUNCTION_NAME):
        raise ExampleFormatError(f"{path.name}: no top-level {BUILD_FUNCTION_NAME}() function")
    metadata = _literal_assignment(tree, METADATA_NAME, path)
    _validate_metadata(metadata, path)
    return ExampleInfo(
        name=path.stem,
        path=path,
        title=metadata["title"],
        description=metadata["description"],
        opset=metadata["opset"],
        export_options=dict(metadata["export_options"]),
        expected_unsupported=[dict(entry) for entry in metadata["expected_unsupported"]],
        fix_tolerance=float(metadata["fix_tolerance"]),
        notes=metadata.get("notes", ""),
        expected_unsupported_dynamo=([dict(entry) for entry in metadata[DYNAMO_EXPECTED_KEY]]
                                     if DYNAMO_EXPECTED_KEY in metadata else None),
    )


def defines_function(tree: ast.Module, name: str) -> bool:
    """True if the module defines a top-level function called ``name``."""
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)


def _literal_assignment(tree: ast.Module, target: str, path: Path) -> dict[str, Any]:
    """Evaluate the literal assigned to the top-level name ``target``."""
    for node in tree.body:
        value = None
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == target for t in node.targets
        ):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            value = node.value if node.target.id == target else None
        if value is not None:
            try:
                result = ast.literal_eval(value)
            except ValueError as exc:
                raise ExampleFormatError(f"{path.name}: {target} is not plain data: {exc}") from exc
            if not isinstance(result, dict):
                raise ExampleFormatError(f"{path.name}: {target} must be a dict")
            return result
    raise ExampleFormatError(f"{path.name}: no top-level {target} = {{...}}")


def _validate_metadata(metadata: dict[str, Any], path: Path) -> None:
    """Raise ExampleFormatError describing the first problem found."""
    missing = [key for key in REQUIRED_KEYS if key not in metadata]
    if missing:
        _fail(path, f"missing keys {missing}")
    for key in ("title", "description"):
        if not isinstance(metadata[key], str) or not metadata[key].strip():
            _fail(path, f"{key} must be a non-empty string")
    if not isinstance(metadata.get("notes", ""), str):
        _fail(path, "notes must be a string")
    opset = metadata["opset"]
    lowest = min(profile.opsets[0] for profile in PROFILES.values())
    if not _is_int(opset) or opset < lowest:
        _fail(path, f"opset must be an int >= {lowest}, got {opset!r}")
    if not isinstance(metadata["export_options"], dict):
        _fail(path, "export_options must be a dict")
    tolerance = metadata["fix_tolerance"]
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or tolerance <= 0:
        _fail(path, f"fix_tolerance must be a positive number, got {tolerance!r}")
    entries = metadata["expected_unsupported"]
    if not isinstance(entries, list):
        _fail(path, "expected_unsupported must be a list")
    for entry in entries:
        _validate_entry(entry, path)
    dynamo_entries = metadata.get(DYNAMO_EXPECTED_KEY, [])
    if not isinstance(dynamo_entries, list):
        _fail(path, f"{DYNAMO_EXPECTED_KEY} must be a list")
    for entry in dynamo_entries:
        _validate_entry(entry, path)


def _validate_entry(entry: Any, path: Path) -> None:
    """Check one expected_unsupported entry."""
    if not isinstance(entry, dict):
        _fail(path, f"expected_unsupported entry {entry!r} is not a dict")
    kind, reason, count = entry.get("kind"), entry.get("reason"), entry.get("count")
    if not isinstance(kind, str) or "::" not in kind:
        _fail(path, f"kind must look like 'namespace::op', got {kind!r}")
    if reason not in VALID_REASONS:
        _fail(path, f"reason {reason!r} for {kind} is not one of {VALID_REASONS}")
    if not _is_int(count) or count < 1:
        _fail(path, f"count for {kind} must be a positive int, got {count!r}")
    if reason == ProblemReason.PYTHON_OP and not isinstance(entry.get("name"), str):
        _fail(path, f"python_op entry for {kind} needs the Function's 'name'")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(path: Path, message: str) -> NoReturn:
    raise ExampleFormatError(f"{path.name}: {message}")
