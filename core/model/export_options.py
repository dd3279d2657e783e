"""Export options and their limits (no torch import: the GUI and CLI processes use them)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from fixport.core.model.capture_settings import CAPTURE_SETTINGS
from fixport.core.model.errors import ExportError
from fixport.core.model.vocabulary import DEFAULT_EXPORTER, DEFAULT_OPSET, EXPORTERS, MAX_OPSET, MIN_OPSET

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
    # torch's capture settings the export runs with (core.model.capture_settings; the exporter's
    # profile says which it takes): chosen by fix --auto where the default does not export
    capture_settings: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ExportError(f"Unknown exporter {self.exporter!r}.", f"Choose one of {', '.join(EXPORTERS)}.")
        if not MIN_OPSET <= self.opset <= MAX_OPSET:
            raise ExportError(f"Opset {self.opset} is outside what the TorchScript exporter supports.",
                              f"Choose an opset from {MIN_OPSET} to {MAX_OPSET}.")
        if self.operator_export_type not in EXPORT_TYPES:
            raise ExportError(f"Unknown export mode {self.operator_export_type!r}.",
                              f"Choose one of {', '.join(EXPORT_TYPES)}.")
        unknown = [name for name in self.capture_settings if name not in CAPTURE_SETTINGS]
        if unknown:
            raise ExportError(f"Unknown capture setting {', '.join(map(repr, unknown))}.",
                              f"Choose from {', '.join(CAPTURE_SETTINGS)}.")


def resolve_export_options(settings: dict[str, Any], overrides: dict[str, Any] | None) -> ExportOptions:
    """The model file's own settings (FIXPORT_EXAMPLE), then whatever the caller set."""
    names = {f.name for f in fields(ExportOptions)}
    values: dict[str, Any] = {}
    if "opset" in settings:
        values["opset"] = settings["opset"]
    values.update({k: v for k, v in dict(settings.get("export_options", {})).items() if k in names})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"Unknown export options: {', '.join(sorted(unknown))}")
    return ExportOptions(**values)

