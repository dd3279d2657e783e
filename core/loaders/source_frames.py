"""Which stack frames are the user's code, and torch's dtype names as numpy's: shared by the
source-graph loaders of every exporter."""
from __future__ import annotations

import os
from pathlib import Path

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
_CORE_DIR = str(Path(__file__).resolve().parents[1])
# Frames inside torch, the standard library or Fixport's engine are never "the user's line".
_LIBRARY_DIRS = (_TORCH_DIR + os.sep, _CORE_DIR + os.sep)
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_PACKAGE_DIRS = ("site-packages", "dist-packages")  # under the stdlib folder, but not the stdlib

TORCH_TO_NUMPY_DTYPE = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}


def is_library_frame(path: str) -> bool:
    """Whether a frame at ``path`` is torch's, the standard library's, Fixport's or generated code."""
    if path.startswith(_LIBRARY_DIRS) or path.startswith("<"):  # "<string>": generated code
        return True
    return path.startswith(_STDLIB_DIR) and not any(part in path for part in _PACKAGE_DIRS)
