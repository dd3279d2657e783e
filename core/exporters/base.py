"""One contract for every exporter: what an export returns and how it is called.

The TorchScript exporter (``torchscript.py``) is the first; the torch.export-based one
(``dynamo.py``) is the second, beside it, with the same :class:`Exporter` protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fixport.core.model.cancel import CancelCallback, ProgressCallback
from fixport.core.model.errors import ExportError
from fixport.core.model.export_options import ExportOptions
from fixport.core.model.graph import Graph
from fixport.core.model.problems import UnsupportedNode

if TYPE_CHECKING:
    import onnx

    from fixport.core.loaders.loading import LoadedModel


@dataclass
class ExportResult:
    """An exported model with both graphs, their provenance, and every problem found."""

    model: onnx.ModelProto
    source_graph: Graph  # the source graph: TorchScript, or the FX graph (kind "fx") for dynamo
    onnx_graph: Graph
    unsupported: list[UnsupportedNode]
    warnings: list[str] = field(default_factory=list)
    runtime_outputs: list[Any] | None = None  # ORT's outputs on the example inputs, when the check ran them

    @property
    def ok(self) -> bool:
        return not self.unsupported


class Exporter(Protocol):
    """What callers need from an exporter."""

    name: str

    def export(self, loaded: LoadedModel, options: ExportOptions, *, diagnose: bool = True,
               run_check: bool = True, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> ExportResult:
        """Export ``loaded`` with ``options``; with ``diagnose``, every unsupported node is
        listed instead of stopping at the first; with ``run_check``, ONNX Runtime runs it once."""
        ...


def refuse_onnx_files(loaded: LoadedModel) -> None:
    """Exporters need a torch module: an opened `.onnx` file has nothing to export."""
    if loaded.module is None:
        raise ExportError(f"{loaded.path.name} is an ONNX file: there is nothing to export.",
                          "Open the PyTorch model to export it, or compare this file with --onnx.")
