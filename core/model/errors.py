"""Errors Fixport shows to users: each names the problem and what to do about it."""
from __future__ import annotations

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


class FixportError(Exception):
    """A problem the user can act on; ``hint`` says how."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "", details: str = "", window_hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details  # long text (a traceback) for the log, never the headline
        self.window_hint = window_hint  # the hint in the window's words, where they differ from the command line's

    def __str__(self) -> str:
        return self.user_text()

    def user_text(self, in_window: bool = False) -> str:
        """The message and what to do, in the window's words where ``in_window`` and it has its own."""
        hint = self.window_hint if in_window and self.window_hint else self.hint
        return f"{self.message}\n  → {hint}" if hint else self.message


class ModelLoadError(FixportError):
    """The model file is missing, corrupt, of an unknown format, or its code raised."""


class InputSpecError(FixportError):
    """An --input/--inputs specification cannot be used."""


class MissingInputsError(InputSpecError):
    """The model file or folder does not give (all) the example inputs: the window asks for them
    (Example inputs dialog), the command line names the --input to give."""


class ShapeNamesError(InputSpecError):
    """Shapes to check name inputs the model lacks; the fields let each front end word it
    (:func:`fixport.core.model.shape_sets.shape_names_error`)."""

    def __init__(self, message: str, hint: str = "", details: str = "", unknown: list[str] | None = None,
                 input_names: list[str] | None = None, example: str = "") -> None:
        super().__init__(message, hint, details)
        self.unknown = list(unknown or [])
        self.input_names = list(input_names or [])
        self.example = example


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
