"""The files of a loaded model's code, where a code-change fix reads the lines it changes (no torch)."""
from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.source_frames import is_library_frame


def code_files(loaded: LoadedModel, named: set[str] = frozenset()) -> dict[str, Path]:
    """File name -> path of the model's code: its own file, the file of every class (and base
    class) its parts are instances of, and each loaded module's file of the names ``named`` (a
    plain function's, as torchvision's NMS), outside torch (a library's: transformers, torchvision)."""
    files = {loaded.path.name: loaded.path} if loaded.path.is_file() else {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if os.path.basename(path) in named and path.endswith(".py") and not is_library_frame(path):
            files.setdefault(os.path.basename(path), Path(path))
    for part in loaded.module.modules():
        for owner in type(part).__mro__:
            try:
                path = inspect.getsourcefile(owner)
            except TypeError:  # a builtin class
                continue
            if path and not is_library_frame(path):
                files.setdefault(os.path.basename(path), Path(path))
    return files


def code_texts(loaded: LoadedModel, names: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(file name, text) of each file of the model's code named in ``names`` that reads as text."""
    wanted = set(names)
    for name, path in code_files(loaded).items():
        if name not in wanted:
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
