"""What torch.export says when it cannot capture a program, in Fixport's words.

``draft_export`` reports every line that stopped the capture (the guard it could not decide, the
user's frame); each becomes a capture-failure problem at that line, with advice by kind of
failure. Shared by the model's capture (:mod:`dynamo`) and a custom op's implementation
captured on its own (:mod:`implementation_rewrite`).
"""
from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from fixport.core.model.problems import UnsupportedNode
from fixport.core.model.vocabulary import ProblemReason

CAPTURE_KIND_PREFIX = "torch.export::"
DATA_DEPENDENT_MARKERS = ("GuardOnDataDependentSymNode", "Data-dependent", "data-dependent", "DATA_DEPENDENT")
_DYNAMIC_SHAPE_MARKERS = ("ConstraintViolation", "Constraints violated", "dynamic_shapes")


@contextmanager
def quiet_torch() -> Iterator[None]:
    """torch.export and draft_export log and warn at length; the diagnosis says it in one line."""
    loggers = [logging.getLogger(name) for name in ("torch.export", "torch._export", "torch.fx.experimental",
                                                      "torch._dynamo", "torch.onnx", "onnxscript")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def capture_advice(text: str) -> str:
    """What to do about a capture failure, by what kind of failure it is."""
    if any(marker in text for marker in DATA_DEPENDENT_MARKERS):
        return ("A branch or shape depends on a tensor's value, which torch.export cannot capture. Make the line "
                "branchless (torch.where, clamp), express it with torch.cond, or state what holds with "
                "torch._check(...) so export can decide; torch.export.draft_export(model, args) lists every such line.")
    if any(marker in text for marker in _DYNAMIC_SHAPE_MARKERS):
        return ("The dynamic shapes asked for do not hold in the model: relax or remove the dynamic axis, or give "
                "dynamic_shapes with torch.export.Dim ranges that the code allows.")
    return ("torch.export could not capture the model. strict=False (tried first) runs forward() in Python; look at "
            "the line above, and try torch.export.draft_export(model, args) for a report of every failure.")


def capture_problems_from_report(draft: torch.export.ExportedProgram) -> list[UnsupportedNode]:
    """One problem per failure in draft_export's report, each at its user line."""
    report_ = getattr(draft, "_report", None)
    problems = []
    for failure in getattr(report_, "failures", []):
        if getattr(failure, "xfail", False):
            continue
        failure_type = failure.failure_type.name.lower()
        data = failure.data if isinstance(failure.data, dict) else {}
        source, code = _user_frame_of_report(data.get("user_stack"), report_)
        expression = data.get("expr", "")
        what = f"cannot decide `{expression}`" if expression else failure_type.replace("_", " ")
        problems.append(UnsupportedNode(
            kind=f"{CAPTURE_KIND_PREFIX}{failure_type}", instance=source or failure_type,
            reason=ProblemReason.CAPTURE_FAILED,
            message=f"torch.export {what} at {source or '?'}" + (f" `{code}`" if code else "") + ". "
                    + capture_advice(failure.failure_type.name),
            scope="", source=source))
    return problems


def _user_frame_of_report(user_stack: Any, report_: Any) -> tuple[str, str]:
    from torch._logging.structured import INTERN_TABLE  # file names are interned once per process

    from fixport.core.loaders.torchscript_graph import _is_library_frame

    table = getattr(report_, "str_to_filename", {}) or {}  # {index: path}, only names new to this export
    names = {index: path for path, index in INTERN_TABLE.items()}
    names.update({k: v for k, v in table.items() if isinstance(k, int)})
    frames = user_stack if isinstance(user_stack, list) else []
    for frame in reversed(frames):
        filename = frame.get("filename")
        path = str(names.get(filename, "")) if isinstance(filename, int) else str(filename or "")
        if path and not _is_library_frame(path):
            return f"{path.rsplit('/', 1)[-1]}:{frame.get('line')}", str(frame.get("loc") or "").strip()
    return "", ""
