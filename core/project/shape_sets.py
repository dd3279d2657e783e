"""Input shapes to check an export at instead of the sizes derived from its dynamic axes.

``x=3x12,mask=3x12`` is one input set (inputs it leaves out keep their traced shape). The command
line takes one per ``--shapes``; the window takes one a line (Run > Shapes to check…) and saves
them in the project as text. The worker refuses a name the model lacks; each front end words
that refusal for itself (:func:`shape_names_error`).
"""
from __future__ import annotations

from fixport.core.foundation.errors import InputSpecError
from fixport.core.project.inputs import parse_input_spec
from fixport.core.words.errors import ShapeNamesError

ShapeSet = dict[str, tuple[int, ...]]
SHAPES_SYNTAX = "NAME=DIMS[,NAME=DIMS]"
SHAPES_MENU = "Run > Shapes to check…"  # where the window takes them


def parse_shape_set(text: str) -> ShapeSet:
    """'x=3x12,mask=3x12' -> {'x': (3, 12), 'mask': (3, 12)}: one set of input shapes to check at."""
    shapes = {}
    for part in (p for p in text.split(",") if p.strip()):
        spec = parse_input_spec(part)
        shapes[spec.name] = spec.shape
    if not shapes:
        raise InputSpecError(f"The shapes {text!r} name no input.",
                             "Write them as NAME=DIMS[,NAME=DIMS], for example x=3x12.")
    return shapes


def parse_shape_lines(lines: list[str]) -> list[ShapeSet]:
    """The window's shape sets, one a line (blank lines skipped); a bad line is refused by its number."""
    return [parse_shape_line(number, line) for number, line in enumerate(lines, 1) if line.strip()]


def parse_shape_line(number: int, line: str) -> ShapeSet:
    """Line ``number`` of the window's shape sets; an error names the line."""
    try:
        return parse_shape_set(line)
    except InputSpecError as error:
        unreadable = error.message.startswith("Cannot read") or "name no input" in error.message
        hint = (f"Write each line as {SHAPES_SYNTAX}, for example x=3x12: one input set a line, the "
                "inputs it leaves out keep their traced shape." if unreadable else error.hint)
        raise InputSpecError(f"Line {number}: {_lower_first(error.message)}", hint) from error


def unknown_names(shape_set: ShapeSet, input_names: list[str]) -> list[str]:
    """The names in ``shape_set`` that are none of the model's inputs, sorted."""
    return sorted(set(shape_set) - set(input_names))


def example_shape_set(input_names: list[str], input_shapes: list[tuple[int, ...]]) -> str:
    """'x=2x8': the first input at its traced shape, for hints."""
    if not input_names:
        return "x=3x12"
    shape = input_shapes[0] if input_shapes else ()
    return f"{input_names[0]}=" + ("x".join(str(d) for d in shape) or "scalar")


def shape_names_error(unknown: list[str], input_names: list[str], example: str, in_window: bool = False,
                      line: int | None = None) -> ShapeNamesError:
    """Shapes name ``unknown`` inputs the model lacks: worded for ``--shapes``, or for the window
    (where ``line`` is the dialog's line that names them, when known)."""
    names, inputs = ", ".join(unknown), ", ".join(input_names)
    if in_window:
        message = f"The shapes to check name {names}, but the model's inputs are {inputs}."
        message = f"Line {line}: {_lower_first(message)}" if line is not None else message
        hint = f"Name the model's inputs in {SHAPES_MENU}, e.g. {example}."
    else:
        message = f"--shapes names {names}, but the model's inputs are {inputs}."
        hint = f"Name the model's inputs, e.g. {example}."
    return ShapeNamesError(message, hint, unknown=unknown, input_names=input_names, example=example)


def for_the_window(error: ShapeNamesError) -> ShapeNamesError:
    """The worker's refusal (worded for ``--shapes``) as the window says it."""
    return shape_names_error(error.unknown, error.input_names, error.example, in_window=True)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]
