"""The node the Template dock offers fixes for, described without Qt."""
from __future__ import annotations

from dataclasses import dataclass

from fixport.core.exporters.profiles import TORCHSCRIPT, ExporterProfile


@dataclass
class TemplateTarget:
    """The node the dock offers fixes for."""

    kind: str  # source-graph kind, e.g. "aten::threshold" or "prim::PythonOp"
    instance: str  # instance key of the selected node
    python_op_name: str | None
    opset: int
    input_types: list[str]
    suggested_opset: int | None = None  # an opset the exporter names as working for this node
    exporter: ExporterProfile = TORCHSCRIPT  # whose templates and fix language
    not_for_templates: str = ""  # why no template can fix this node's problem (it is in the model's code)
    pinned_dims: str = ""  # what a fix built for the traced sizes pins (declared dynamic dims), or ''
    fixes_only: bool = False  # a problem with no node (a capture failure): no op template, only its fix offers
