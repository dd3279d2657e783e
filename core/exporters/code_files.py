"""The files of a loaded model's code, where a code-change fix reads the lines it changes (no torch)."""
from __future__ import annotations

import inspect
import os
from pathlib import Path

from fixport.core.loaders.loading import LoadedModel
from fixport.core.loaders.source_frames import is_library_frame


def code_files(loaded: LoadedModel) -> dict[str, Path]:
    """File name -> path of the model's code: its own file, and the file of every class (and base
    class) its parts are instances of, outside torch (a library's: transformers, torchvision)."""
    files = {loaded.path.name: loaded.path} if loaded.path.is_file() else {}
    for part in loaded.module.modules():
        for owner in type(part).__mro__:
            try:
                path = inspect.getsourcefile(owner)
            except TypeError:  # a builtin class
                continue
            if path and not is_library_frame(path):
                files.setdefault(os.path.basename(path), Path(path))
    return files
