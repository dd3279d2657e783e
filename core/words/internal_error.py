"""Exceptions in Fixport's own code that a job survived: defects to report, never advice.

A job keeps going where one step of it fails (the outputs of a comparison stand without its
per-node analysis), but a failure inside Fixport's own code is a bug, not a note on the user's
model: the job records it as an :class:`InternalError`, with its traceback for the log, and the
front end says it is a Fixport bug and where the log is. Torch-free.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXPORT_ROOT = Path(__file__).resolve().parents[2]  # the package folder: core/words/ is two below it
MODEL_FOLDERS = ("examples", "bench")  # models that come with Fixport: code it runs as the user's


@dataclass
class InternalError:
    """One step a job did without, because Fixport's own code raised there."""

    step: str  # "per-node analysis"
    error: str  # "AttributeError: 'list' object has no attribute 'dtype'"
    details: str  # the traceback, for the log file

    def sentence(self) -> str:
        return (f"Fixport bug: the {self.step} stopped with {self.error}; the rest of the result stands "
                "without it. Please report it with the log.")

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "error": self.error}


def raised_in_fixport(error: BaseException) -> bool:
    """Whether ``error`` is a defect of Fixport's: raised in Fixport's own source (the innermost frame
    of its traceback; not torch's, ONNX Runtime's or the user's model) and not a RuntimeError, which
    is how torch's kernels and its TorchScript interpreter fail on a graph (called from our code, their
    innermost Python frame is ours) and how Fixport says on purpose that a step cannot be done."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames or isinstance(error, RuntimeError):
        return False
    try:
        inside = Path(frames[-1].filename).resolve().relative_to(FIXPORT_ROOT)
    except ValueError:
        return False
    return inside.parts[0] not in MODEL_FOLDERS


def internal_error(step: str, error: BaseException) -> InternalError:
    first_line = (str(error).strip().splitlines() or [""])[0][:300]
    return InternalError(step, f"{type(error).__name__}: {first_line}".rstrip(": "),
                         "".join(traceback.format_exception(error)))
