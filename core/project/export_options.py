"""Export options and their limits (no torch import: the GUI and CLI processes use them)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from fixport.core.project.capture_settings import CAPTURE_SETTINGS
from fixport.core.words.errors import ExportError
from fixport.core.words.vocabulary import DEFAULT_EXPORTER, DEFAULT_OPSET, EXPORTERS

EXPORT_TYPES = ("ONNX", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH")


@dataclass
class ExportOptions:
    """Everything that shapes one export; saved in projects."""

    opset: int = DEFAULT_OPSET
    operator_export_type: str = "ONNX"
    input_names: list[str] | None = None
    output_names: list[str] | None = None
    dynamic_axes: dict[str, dict[int, str]] | None = None
    do_constant_folding: bool = True
    autograd_inlining: bool = True
    custom_opsets: dict[str, int] = field(default_factory=dict)
    exporter: str = DEFAULT_EXPORTER  # "torchscript" or "dynamo" (torch.export-based)
    # torch's capture settings the export runs with (core.project.capture_settings; the exporter's
    # profile says which it takes): chosen by fix --auto where the default does not export
    capture_settings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # JSON (a project, --dynamic-axes, the window) keys every axis by a string; torch wants ints.
        self.dynamic_axes = normalised_dynamic_axes(self.dynamic_axes)

    def validate(self, opsets: tuple[int, int] | None = None) -> None:
        """Raise ExportError for an option no exporter takes; ``opsets``: the exporter's (lowest, highest)."""
        if self.exporter not in EXPORTERS:
            raise ExportError(f"Unknown exporter {self.exporter!r}.", f"Choose one of {', '.join(EXPORTERS)}.")
        if opsets is not None and not opsets[0] <= self.opset <= opsets[1]:
            raise ExportError(f"Opset {self.opset} is outside what the {self.exporter} exporter supports.",
                              f"Choose an opset from {opsets[0]} to {opsets[1]}.")
        if self.operator_export_type not in EXPORT_TYPES:
            raise ExportError(f"Unknown export mode {self.operator_export_type!r}.",
                              f"Choose one of {', '.join(EXPORT_TYPES)}.")
        unknown = [name for name in self.capture_settings if name not in CAPTURE_SETTINGS]
        if unknown:
            raise ExportError(f"Unknown capture setting {', '.join(map(repr, unknown))}.",
                              f"Choose from {', '.join(CAPTURE_SETTINGS)}.")


def normalised_dynamic_axes(axes: Any) -> dict[str, dict[int, str]] | None:
    """``dynamic_axes`` as torch takes them: input/output name -> {int axis: dim name}, whether the
    axes came as JSON strings ({"x": {"1": "seq"}}) or as a list ({"x": [0, 1]}, named the way
    torch names them). Raises :class:`ExportError` naming the bad entry."""
    if axes is None:
        return None
    if not isinstance(axes, dict):
        raise _bad_axes(f"dynamic_axes must map input or output names to their axes, not {type(axes).__name__}")
    normalised: dict[str, dict[int, str]] = {}
    for name, dims in axes.items():
        if isinstance(dims, (list, tuple)):
            dims = {axis: f"{name}_dynamic_axes_{index + 1}" for index, axis in enumerate(dims)}
        if not isinstance(dims, dict):
            raise _bad_axes(f"the axes of {name!r} must be a mapping such as {{\"0\": \"batch\"}} or a list "
                            f"such as [0, 1], not {dims!r}")
        normalised[str(name)] = {_axis_index(name, axis): _dim_name(name, axis, dim) for axis, dim in dims.items()}
    return normalised


def _axis_index(name: str, axis: Any) -> int:
    if isinstance(axis, int) and not isinstance(axis, bool):
        return axis
    if isinstance(axis, str) and axis.strip().lstrip("-").isdigit():
        return int(axis)
    raise _bad_axes(f"axis {axis!r} of {name!r} is not an axis index (0 for the first dim, 1 for the second, ...)")


def _dim_name(name: str, axis: Any, dim: Any) -> str:
    if isinstance(dim, str) and dim.strip():
        return dim
    raise _bad_axes(f"axis {axis!r} of {name!r} needs a dim name such as \"batch\", not {dim!r}")


def _bad_axes(problem: str) -> ExportError:
    return ExportError(f"The dynamic axes are not valid: {problem}.",
                       'Write them as {"input name": {"axis index": "dim name"}}, e.g. {"x": {"0": "batch"}}.')


def resolve_export_options(settings: dict[str, Any], overrides: dict[str, Any] | None,
                           default_opset: Callable[[str], int] | None = None) -> ExportOptions:
    """The model file's own settings (FIXPORT_EXAMPLE), then whatever the caller set; where neither
    names an opset, ``default_opset(exporter)`` (else :data:`DEFAULT_OPSET`)."""
    names = {f.name for f in fields(ExportOptions)}
    values: dict[str, Any] = {}
    if "opset" in settings:
        values["opset"] = settings["opset"]
    values.update({k: v for k, v in dict(settings.get("export_options", {})).items() if k in names})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"Unknown export options: {', '.join(sorted(unknown))}")
    if "opset" not in values and default_opset is not None:
        values["opset"] = default_opset(values.get("exporter") or DEFAULT_EXPORTER)
    return ExportOptions(**values)

