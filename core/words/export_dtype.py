"""The dtype a checkpoint folder was exported in, and how each ONNX Runtime provider runs that dtype
(no torch import: the record crosses the worker process and the front ends print it)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProviderSpeed:
    """How one ONNX Runtime provider runs an export in one dtype."""

    provider: str  # "CPU", "CUDA"
    runs_in: str  # the dtype its kernels compute in ("float32" where it widens, "" where it cannot run it)
    fast: bool  # whether this dtype is the fast one on that provider
    how: str  # one sentence: what the provider does with the dtype, from its kernel table
    source: str = ""  # where that comes from (the installed build's kernel table, or ONNX Runtime's docs)


@dataclass(frozen=True)
class ExportDtype:
    """The dtype the checkpoint's weights were exported in, where it came from, and what each provider does."""

    dtype: str  # "bfloat16"
    checkpoint_dtype: str  # the checkpoint's own (its config's dtype), "" where the config names none
    chosen: str  # what --dtype said ("auto", "float32", ...)
    providers: list[ProviderSpeed] = field(default_factory=list)

    def line(self) -> str:
        """'Exported in bfloat16 (the checkpoint's own; --dtype to change).'"""
        if self.chosen in ("", "auto"):
            why = "the checkpoint's own" if self.checkpoint_dtype else "the config names none: torch's default"
        elif self.checkpoint_dtype and self.checkpoint_dtype != self.dtype:
            why = f"--dtype {self.chosen}; the checkpoint is {self.checkpoint_dtype}"
        else:
            why = f"--dtype {self.chosen}"
        return f"Exported in {self.dtype} ({why}; --dtype to change)."

    def lines(self) -> list[str]:
        """The line above, then one line per provider."""
        return [self.line(), *(f"ONNX Runtime {p.provider}: {p.how}" for p in self.providers)]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
