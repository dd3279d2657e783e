"""Which files Fixport opens, checked without importing torch."""
from __future__ import annotations

import stat
from pathlib import Path

from fixport.core.foundation.errors import ModelLoadError

PYTHON_SUFFIXES = (".py",)
TORCHSCRIPT_SUFFIXES = (".pt", ".ts", ".pth", ".jit")
EXPORTED_PROGRAM_SUFFIXES = (".pt2",)
ONNX_SUFFIXES = (".onnx",)
MODEL_FILE_SUFFIXES = PYTHON_SUFFIXES + TORCHSCRIPT_SUFFIXES + EXPORTED_PROGRAM_SUFFIXES + ONNX_SUFFIXES
CHECKPOINT_CONFIG_FILE = "config.json"  # what makes a folder a transformers checkpoint (save_pretrained, hub snapshot)


def existing_model_path(path: str | Path) -> Path:
    """The resolved path, or a ModelLoadError saying why it cannot be opened."""
    given = str(path)
    path = Path(path).expanduser().resolve()
    if not path.exists():
        if _looks_like_hub_id(given):
            raise ModelLoadError(f"{given} is not a folder on this machine; Fixport opens checkpoints offline "
                                 "only and downloads nothing.",
                                 f"Download it first (hf download {given}) and open the folder it was saved "
                                 "to (the snapshot folder in the hub cache), or a save_pretrained folder.")
        raise ModelLoadError(f"Model file not found: {path}", "Check the path and try again.")
    if path.is_dir():
        if is_checkpoint_folder(path):
            return path
        raise ModelLoadError(f"{path} is a folder without {CHECKPOINT_CONFIG_FILE}: neither a model file nor a "
                             "transformers checkpoint.",
                             f"Open one of: {', '.join(MODEL_FILE_SUFFIXES)}, or a folder written by "
                             "save_pretrained (with config.json and its weights).")
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


def is_checkpoint_folder(path: Path) -> bool:
    """A folder transformers' from_pretrained reads: config.json beside the weights."""
    return path.is_dir() and (path / CHECKPOINT_CONFIG_FILE).is_file()


def _looks_like_hub_id(text: str) -> bool:
    """``Qwen/Qwen2-0.5B``: an id on the Hugging Face hub rather than a path on disk."""
    parts = text.split("/")
    return (len(parts) == 2 and all(parts) and not text.startswith((".", "~"))
            and not any(text.lower().endswith(suffix) for suffix in MODEL_FILE_SUFFIXES))
