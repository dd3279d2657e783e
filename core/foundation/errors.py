"""Errors raised where the model cannot be opened or its inputs made: the fix script's and Fixport's
one set of classes (``fixport.core.words.errors`` re-exports them beside the engine's others)."""
from __future__ import annotations


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
