"""Which models a sweep runs: model files given or found under folders, and a checkpoint folder as one model."""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from fixport.core.foundation.errors import FixportError
from fixport.core.project.model_files import MODEL_FILE_SUFFIXES, PYTHON_SUFFIXES

CHECKPOINT_MARKER = "config.json"  # a folder holding one is a checkpoint: one model, not a folder to search
HASH_CHUNK_BYTES = 1 << 20


def is_checkpoint_folder(path: Path) -> bool:
    return path.is_dir() and (path / CHECKPOINT_MARKER).is_file()


def defines_a_model(path: Path) -> bool:
    """A .py file Fixport can open: a top-level build(), or `model` and `example_inputs`. Helper modules
    beside the models (``_common.py``, ``__init__.py``) are not models."""
    if path.name.startswith("_"):
        return False
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return True  # let check say what is wrong with it, in its row
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assigned = {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    return "build" in functions or {"model", "example_inputs"} <= assigned


def _is_model_file(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix not in MODEL_FILE_SUFFIXES or path.name.startswith("."):
        return False
    return defines_a_model(path) if suffix in PYTHON_SUFFIXES else True


def sweep_targets(paths: list[str]) -> dict[Path, str]:
    """Every model the paths name, in order and once each, with the label reports show for it: a model
    file or a checkpoint folder (its name), or the model files and checkpoint folders found under a
    folder (sorted; their path inside it)."""
    found: dict[Path, str] = {}
    for text in paths:
        path = Path(text).expanduser().resolve()
        if not path.exists():
            raise FixportError(f"{text} does not exist.", "Give model files or folders that hold them.")
        if path.is_file() or is_checkpoint_folder(path):
            found.setdefault(path, path.name)
            continue
        for candidate in _models_under(path):
            found.setdefault(candidate, str(candidate.relative_to(path)))
    return found


def _models_under(folder: Path) -> list[Path]:
    models: list[Path] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "__pycache__")):
            continue
        if is_checkpoint_folder(entry):
            models.append(entry)
        elif entry.is_dir():
            models.extend(_models_under(entry))
        elif entry.is_file() and _is_model_file(entry):
            models.append(entry)
    return models


def content_hash(path: Path) -> str:
    """sha256 of the file's bytes, or of a folder's files (names and bytes, hidden ones left out)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
    for file in files:
        if file != path:
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with file.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
    return digest.hexdigest()
