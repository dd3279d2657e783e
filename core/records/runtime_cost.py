"""What an export costs to ship and to run: file size, node count and ONNX Runtime latency (no torch)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_LATENCY_RUNS = 5  # a median of a few runs: small next to the comparison, steady enough to rank exports
MAX_LATENCY_RUNS = 1000
NOTABLY_SLOWER = 1.25  # a fixed export this much slower than the plain one is called out in Fix all's summary


@dataclass
class RuntimeCost:
    """One export's size and its median ONNX Runtime latency on the example inputs."""

    file_bytes: int  # the graph and every weight, inline or external: what `export` writes
    node_count: int  # nodes of the main graph, as exported (before ONNX Runtime's own fusions)
    latency_ms: float | None = None  # median of ``latency_runs`` session runs; None when not measured
    latency_runs: int = 0
    providers: tuple[str, ...] = ()  # where the timed session ran

    def summary(self) -> str:
        """``1.2 MB, 41 nodes, 0.84 ms median of 5 runs on CPUExecutionProvider``."""
        text = f"{readable_bytes(self.file_bytes)}, {self.node_count} nodes"
        if self.latency_ms is not None:
            where = f" on {', '.join(self.providers)}" if self.providers else ""
            text += f", {self.latency_ms:.3g} ms median of {self.latency_runs} run(s){where}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"file_bytes": self.file_bytes, "node_count": self.node_count,
                "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 4),
                "latency_runs": self.latency_runs, "providers": list(self.providers)}


def readable_bytes(size: int) -> str:
    """``812 B``, ``14.2 kB``, ``3.1 MB``, ``1.4 GB`` (powers of 1000, as file managers show them)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1000
    return f"{size} B"


def validate_latency_runs(runs: int) -> None:
    """A ValueError naming the range, for --latency-runs."""
    if not 0 <= runs <= MAX_LATENCY_RUNS:
        raise ValueError(f"--latency-runs {runs} is out of range: use 0 (do not time) to {MAX_LATENCY_RUNS}.")


def cost_change(before: RuntimeCost, after: RuntimeCost) -> str:
    """How ``after`` compares with ``before``: ``size ×1.02, latency ×1.8 (slower)``."""
    parts = [f"size ×{after.file_bytes / before.file_bytes:.2f}" if before.file_bytes else ""]
    if before.latency_ms and after.latency_ms is not None:
        ratio = after.latency_ms / before.latency_ms
        parts.append(f"latency ×{ratio:.2f}" + (" (notably slower)" if ratio >= NOTABLY_SLOWER else ""))
    return ", ".join(part for part in parts if part)
