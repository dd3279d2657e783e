"""Draw first, analyse after: an `.onnx` file's graph read in the window process, off the UI thread.

The worker's check (ONNX Runtime kernels, problems) needs torch's process to start, which takes
seconds; the graph itself needs only onnx. So the window reads the graph here and draws it at
once, and the worker's result decorates it when it arrives. Weights are not loaded from
external data files; the graph is all that is kept.
"""
from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from fixport.core.foundation.errors import FixportError
from fixport.core.words.graph import Graph


def read_onnx_graph(path: Path) -> Graph:
    """The neutral graph of an `.onnx` file, without its external weights."""
    from fixport.core.onnx_io.onnx_files import read_model_file
    from fixport.core.onnx_io.onnx_graph import onnx_to_graph

    return onnx_to_graph(read_model_file(path, "model file"))


class OnnxPreview(QObject):
    """Reads graphs in a background thread; ``ready(path, graph)`` arrives on the GUI thread."""

    ready = Signal(str, object)  # path as given to read(), Graph
    failed = Signal(str, str)  # path, message (the worker's analysis reports it too)

    def read(self, path: str | Path) -> None:
        threading.Thread(target=self._read, args=(str(path),), daemon=True, name="fixport-onnx-preview").start()

    def _read(self, path: str) -> None:
        try:
            graph = read_onnx_graph(Path(path))
            import pyqtgraph.functions  # noqa: F401  (the first paint needs it: load it off the UI thread)
        except FixportError as error:
            self.failed.emit(path, error.message)
            return
        except Exception as error:  # a thread must not swallow it: the window logs it
            self.failed.emit(path, f"{type(error).__name__}: {error}")
            return
        self.ready.emit(path, graph)
