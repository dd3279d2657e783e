"""Errors Fixport shows to users: each names the problem and what to do about it."""
from __future__ import annotations

# The errors a fix script raises too are defined in its support and are these same classes here
# (isinstance checks and pickling across the worker see one class).
from fixport.core.foundation.errors import FixportError, InputSpecError, ModelLoadError

__all__ = [
    "MAX_PRINTED_MESSAGE_CHARS",
    "MAX_SHOWN_MESSAGE_CHARS",
    "ExportError",
    "NothingToCompareError",
    "ProjectError",
    "ShapeNamesError",
    "TemplateValidationError",
    "TraceError",
    "UntrustedFileError",
    "WorkerCrashed",
    "WorkerError",
    "trimmed_message",
]

# An exporter's error text can hold a whole TorchScript graph (100 kB and more): what a person is
# shown is cut to this many characters; the details (the log) keep it whole.
MAX_SHOWN_MESSAGE_CHARS = 1000
MAX_PRINTED_MESSAGE_CHARS = 3000  # the command line's last guard, for a message no exporter trimmed


def trimmed_message(text: str, limit: int = MAX_SHOWN_MESSAGE_CHARS) -> str:
    """``text`` cut at a line end before ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if "\n" in cut[limit // 2:]:
        cut = cut.rsplit("\n", 1)[0]
    return f"{cut.rstrip()}\n  … ({len(text) - len(cut):,} more characters in the log)"


class ShapeNamesError(InputSpecError):
    """Shapes to check name inputs the model lacks; the fields let each front end word it
    (:func:`fixport.core.project.shape_sets.shape_names_error`)."""

    def __init__(self, message: str, hint: str = "", details: str = "", unknown: list[str] | None = None,
                 input_names: list[str] | None = None, example: str = "") -> None:
        super().__init__(message, hint, details)
        self.unknown = list(unknown or [])
        self.input_names = list(input_names or [])
        self.example = example


class UntrustedFileError(ModelLoadError):
    """A pickled model file opened without trusting it (unpickling runs code stored in the file): the
    window asks the user, the command line's hint says --trust."""


class TraceError(FixportError):
    """torch.jit.trace failed inside the user's forward()."""


class ExportError(FixportError):
    """The exporter failed for a reason other than an unsupported node."""


class NothingToCompareError(ExportError):
    """The export still has problems, so there is no ONNX model to compare: ``problems`` lists them
    (empty where the exporter did not diagnose them), so the advice can fit their kinds."""

    def __init__(self, message: str, hint: str = "", details: str = "", problems: list | None = None) -> None:
        super().__init__(message, hint, details)
        self.problems = list(problems or [])


class WorkerError(FixportError):
    """The export worker crashed, hung, or was cancelled."""


class WorkerCrashed(WorkerError):
    """The worker process died during a job; ``stage`` is the job's last progress message."""

    def __init__(self, message: str, hint: str = "", details: str = "", exit_code: int | None = None,
                 stage: str = "") -> None:
        super().__init__(message, hint, details)
        self.exit_code, self.stage = exit_code, stage


class ProjectError(FixportError):
    """A project file cannot be read or written."""


class TemplateValidationError(FixportError):
    """A fix's source does not compile or does not fit its op; ``line`` points at the problem."""

    def __init__(self, message: str, hint: str = "", details: str = "", line: int | None = None,
                 target: str = "") -> None:
        super().__init__(message, hint, details)
        self.line = line
        self.target = target
