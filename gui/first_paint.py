"""Report when a graph pane first paints a graph, for benchmarks that own the clock.

`bench/startup.py` sets FIXPORT_FIRST_PAINT_FILE and launches the real app; each pane appends
"<pane> <graph name> <time.time()>" to that file the first time it paints a graph, so the
bench measures from process start to pixels, as a user waits.
"""
from __future__ import annotations

import os
import time

FIRST_PAINT_FILE_VARIABLE = "FIXPORT_FIRST_PAINT_FILE"
_reported: set[tuple[str, str]] = set()


def report_first_paint(pane: str, graph_name: str) -> None:
    """Append one line per (pane, graph) the first time it is painted; nothing unless asked."""
    path = os.environ.get(FIRST_PAINT_FILE_VARIABLE)
    if not path or (pane, graph_name) in _reported:
        return
    _reported.add((pane, graph_name))
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(f"{pane} {graph_name} {time.time():.6f}\n")
