"""Which files Fixport opens, checked without importing torch."""
from __future__ import annotations

import stat
from pathlib import Path

from fixport.core.model.errors import ModelLoadError

PYTHON_SUFFIXES = (".py",)
TORCHSCRIPT_SUFFIXES = (".pt", ".ts", ".pth", ".jit")
EXPORTED_PROGRAM_SUFFIXES = (".pt2",)
ONNX_SUFFIXES = (".onnx",)
MODEL_FILE_SUFFIXES = PYTHON_SUFFIXES + TORCHSCRIPT_SUFFIXES + EXPORTED_PROGRAM_SUFFIXES + ONNX_SUFFIXES


def existing_model_path(path: str | Path) -> Path:
    """The resolved path, or a ModelLoadError saying why it cannot be opened."""
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise ModelLoadError(f"Model file not found: {path}", "Check the path and try again.")
    if path.is_dir():
        raise ModelLoadError(f"{path} is a folder, not a model file.",
                             f"Open one of: {', '.join(MODEL_FILE_SUFFIXES)}.")
    refuse_non_regular_file(path, "model file")
    if path.suffix.lower() not in MODEL_FILE_SUFFIXES:
        raise ModelLoadError(f"Unknown model file type {path.suffix!r}: {path.name}",
                             f"Fixport opens {', '.join(MODEL_FILE_SUFFIXES)} files.")
    return path


def refuse_non_regular_file(path: Path, role: str) -> None:
    """A FIFO, socket or device would block or never end when read: refuse it before opening."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise ModelLoadError(f"The {role} {path} is {kind}, not a regular file.",
                             "Save it to a regular file and open that.")
