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
from dataclasses import replace
from typing import Any

import torch

from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

CAPTURE_KIND_PREFIX = "torch.export::"
DATA_DEPENDENT_MARKERS = ("GuardOnDataDependentSymNode", "Data-dependent", "data-dependent", "DATA_DEPENDENT")
# torch's words where a data-dependent value had to become a concrete Python number (int(), .item())
_PYTHON_NUMBER_MARKER = "Could not extract specialized integer"
_FAKE_KERNEL_MARKER = "MISMATCHED_FAKE_KERNEL"  # draft_export's failure type for torch's own kernels
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
    if _FAKE_KERNEL_MARKER in text:
        return ("This is torch disagreeing with itself (an op's fake kernel against its real one), met while "
                "draft_export ran on past the capture failures listed with it; no line of the model is to blame: "
                "fix those lines first, and report the op to PyTorch if it stays.")
    if _PYTHON_NUMBER_MARKER in text:
        return ("A tensor's value becomes a Python number here (int(), .item(), .tolist()) where torch.export needs "
                "one it knows: keep it a tensor (torch ops, not Python arithmetic or lists), bound it with "
                "torch._check(...) where it only sizes a tensor, or, where it is fixed for the model, pass it as a "
                "constant instead of an input; torch.export.draft_export(model, args) lists every such line.")
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
        expression, op = data.get("expr", ""), data.get("op", "")
        what = (f"cannot decide `{expression}`" if expression else
                f"found torch's fake kernel of {op} unlike the real one ({data.get('reason', '')})" if op else
                failure_type.replace("_", " "))
        where = (f" at {source}" if source else "") + (f" `{code}`" if code else "")
        problems.append(UnsupportedNode(
            kind=f"{CAPTURE_KIND_PREFIX}{failure_type}", instance=source or op or failure_type,  # no line: the op
            reason=ProblemReason.CAPTURE_FAILED,
            message=f"torch.export {what}{where}. {capture_advice(failure.failure_type.name)}",
            scope="", source=source))
    return problems


def stopping_line_first(stopped: UnsupportedNode, reported: list[UnsupportedNode]) -> list[UnsupportedNode]:
    """draft_export's failures with the one torch.export stopped on first: ``stopped`` (made from
    the exception, at its deepest user frame) where no failure of the report is at its line, else
    the report's failure there. The report lists failures as draft_export met them, some with no
    user frame at all, so its first is not always the line that stopped the capture."""
    if not reported:
        return [stopped]
    if not stopped.source:
        return reported
    same = next((p for p in reported if p.source == stopped.source), None)
    if same is None:
        return [stopped, *reported]
    # torch's own words for the line, and advice that fits them, under the report's kind
    return [replace(stopped, kind=same.kind, instance=same.instance), *(p for p in reported if p is not same)]


def _user_frame_of_report(user_stack: Any, report_: Any) -> tuple[str, str]:
    from torch._logging.structured import INTERN_TABLE  # file names are interned once per process

    from fixport.core.loaders.source_frames import is_library_frame

    table = getattr(report_, "str_to_filename", {}) or {}  # {index: path}, only names new to this export
    names = {index: path for path, index in INTERN_TABLE.items()}
    names.update({k: v for k, v in table.items() if isinstance(k, int)})
    frames = user_stack if isinstance(user_stack, list) else []
    for frame in reversed(frames):
        filename = frame.get("filename")
        path = str(names.get(filename, "")) if isinstance(filename, int) else str(filename or "")
        if path and not is_library_frame(path):
            return f"{path.rsplit('/', 1)[-1]}:{frame.get('line')}", str(frame.get("loc") or "").strip()
    return "", ""
