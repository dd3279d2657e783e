"""Where ONNX Runtime ran each node, read from its own session profile (no torch).

ORT places nodes it has no kernel for on the next provider (CPU) without a word. With
``SessionOptions.enable_profiling`` every executed node leaves an event
``{"cat": "Node", "name": "<node>_kernel_time", "args": {"op_name": ..., "provider": ...}}``;
:func:`collect_placement` ends the profile after the first run (later runs are not recorded),
reads those events and deletes the file.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import onnxruntime as ort

from fixport.core.records.compare_result import NodePlacement

NODE_EVENT_CATEGORY = "Node"
KERNEL_EVENT_SUFFIX = "_kernel_time"
PROFILE_PREFIX = "fixport-ort-profile"


def enable_profiling(options: ort.SessionOptions) -> ort.SessionOptions:
    """Turn profiling on, writing to the temporary folder (the file is removed when read)."""
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.gettempdir(), f"{PROFILE_PREFIX}-{os.getpid()}")
    return options


def placement_from_events(events: Iterable[dict[str, Any]]) -> NodePlacement:
    """Node name and provider of every kernel event, each node once, in the order ORT ran them."""
    placement = NodePlacement()
    seen: set[str] = set()
    for event in events:
        name = str(event.get("name", ""))
        args = event.get("args") or {}
        if event.get("cat") != NODE_EVENT_CATEGORY or not name.endswith(KERNEL_EVENT_SUFFIX) or "provider" not in args:
            continue
        node = name[: -len(KERNEL_EVENT_SUFFIX)] or f"#{args.get('node_index', '?')}"
        if node in seen:
            continue
        seen.add(node)
        placement.nodes_by_provider.setdefault(str(args["provider"]), []).append(node)
        placement.op_types[node] = str(args.get("op_name", ""))
    return placement


def read_profile(path: str | Path) -> NodePlacement:
    """The placement recorded in one ORT profile file."""
    return placement_from_events(json.loads(Path(path).read_text(encoding="utf-8")))


def collect_placement(session: ort.InferenceSession) -> NodePlacement | None:
    """End ``session``'s profiling and read the placement (None when profiling was off)."""
    path = session.end_profiling()
    if not path:
        return None
    try:
        return read_profile(path)
    finally:
        Path(path).unlink(missing_ok=True)
