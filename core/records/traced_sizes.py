"""The dims an export declares dynamic and their traced sizes, from what an analysis knows (its
resolved export options and example input shapes; no torch): what a fix built for the traced
sizes pins. The worker's shape check, the Template dock and the `fix --auto` reports read them here.
"""
from __future__ import annotations

from fixport.core.foundation.dynamic_dims import declared_dims
from fixport.core.project.export_options import ExportOptions
from fixport.core.records.results import AnalysisResult
from fixport.core.words.vocabulary import ProblemReason

__all__ = ["pinned_dims_note", "traced_sizes"]


def traced_sizes(options: ExportOptions, input_names: list[str], input_shapes: list[tuple[int, ...]]
                 ) -> dict[str, int]:
    """Declared dim name -> the size it was traced at (a dim of several inputs: its first one's)."""
    sizes = {}
    names = list(options.input_names or input_names)  # the ONNX names the axes are declared on
    for name, places in declared_dims(options.dynamic_axes, names, input_shapes).items():
        position, axis = places[0]
        if axis < len(input_shapes[position]):  # a scalar input has no axis to read
            sizes[name] = int(input_shapes[position][axis])
    return sizes


def pinned_dims_note(analysis: AnalysisResult | None, fix_applied: bool = False) -> str:
    """What a fix built for the traced sizes pins, for the export ``analysis`` describes ('' when it
    declares no dynamic dim): 'Built for the traced sizes: height=30, width=30 are declared dynamic;
    this fix may hold only there.' With ``fix_applied`` (the analysis is of the export with the fix),
    the other sizes that export matched torch at are named instead: some such fixes do hold there
    (a pooling matrix built at batch 1 serves every batch)."""
    if analysis is None:
        return ""
    sizes = traced_sizes(analysis.options, analysis.input_names, analysis.input_shapes)
    if not sizes:
        return ""
    dims = ", ".join(f"{name}={size}" for name, size in sizes.items())
    wrong_elsewhere = any(p.reason == ProblemReason.SHAPE_SPECIALISED for p in analysis.unsupported)
    if fix_applied and analysis.other_sizes_checked and not wrong_elsewhere:
        return (f"Declared dynamic, traced at {dims}: the export with this fix also matched torch at "
                f"{'; '.join(analysis.other_sizes_checked)}.")
    return (f"Built for the traced sizes: {dims} {'is' if len(sizes) == 1 else 'are'} declared dynamic; "
            "this fix may hold only there.")
