"""Which files Fixport opens, checked without importing torch."""
from __future__ import annotations

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
    if path.suffix.lower() not in MODEL_FILE_SUFFIXES:
        raise ModelLoadError(f"Unknown model file type {path.suffix!r}: {path.name}",
                             f"Fixport opens {', '.join(MODEL_FILE_SUFFIXES)} files.")
    return path
