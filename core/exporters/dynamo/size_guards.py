"""The sizes a captured program holds for. torch.export turns what the code assumes about its
inputs' sizes into guards and runtime assertions (a decoder's mask as long as the past and the new
tokens together); the program refuses inputs that break one, and the ONNX file translated from it
assumes the same without checking (torch.onnx drops the assertions). So a size set the program
refuses tests the model's code, not the export: check says so instead of blaming a node, as torch's
own export would fail there too."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# How torch words a broken assumption: a runtime assertion (the capture torch.onnx runs defers
# guards to them), a guard of the module's GuardsFn, or an older input-constraint pre-hook.
REFUSAL_MARKERS = ("Runtime assertion failed for expression", "Guard failed", "Expected input at")
_SYMBOL = re.compile(r"\b[su]\d+\b")
_RANGE = re.compile(r"[<>]=? *-?\d+|-?\d+ *[<>]=?")  # "x.size()[1] >= 7": a bound, not "== 2"


@dataclass
class SizeGuards:
    """A captured program's assumptions on its inputs' sizes, checked on one input set at a time."""

    program: torch.export.ExportedProgram
    # The dims were declared with the ranges torch.export suggested (capture setting suggested_dims):
    # a guard that pins a range of a declared dim is the export's declared range, not a specialisation.
    declared_ranges: bool = False
    _module: torch.nn.Module | None = field(default=None, repr=False)

    def refusal(self, inputs: Sequence[Any]) -> str:
        """What ``inputs`` break, in torch's words with its size symbols named by input and axis
        ('' when they keep every assumption, or when the program fails there for another reason:
        that is for the check to find). Runs the program once: its assertions sit in the graph."""
        if self._module is None:
            self._module = self.program.module()
        try:
            with torch.no_grad():
                self._module(*inputs)
        except Exception as exc:  # noqa: BLE001 -- torch raises AssertionError or RuntimeError here
            text = str(exc).strip()
            broken = text.splitlines()[0].split(" on node ")[0] if text else ""
            # Only a relation between dynamic sizes is the code's assumption; a guard with no size
            # symbol ("a.size()[0] == 2") pins a dim that was not declared dynamic: the export's
            # specialisation, which the check is there to report.
            if any(marker in text for marker in REFUSAL_MARKERS) and (_SYMBOL.search(broken) or (
                    self.declared_ranges and _RANGE.search(broken))):
                return self._named(broken) + (" (the range torch.export's suggested fixes declare)"
                                              if self.declared_ranges and not _SYMBOL.search(broken) else "")
        return ""

    def _named(self, text: str) -> str:
        """``text`` with each size symbol (s53) as the first input dim it stands for (attention_mask.shape[1])."""
        names: dict[str, str] = {}
        for node in self.program.graph.nodes:
            value = node.meta.get("val") if node.op == "placeholder" else None
            for axis, size in enumerate(getattr(value, "shape", ()) if isinstance(value, torch.Tensor) else ()):
                names.setdefault(str(size), f"{node.name}.shape[{axis}]")
        return _SYMBOL.sub(lambda match: names.get(match.group(0), match.group(0)), text)
