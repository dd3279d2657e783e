"""The dynamo exporter's per-node capture: the ExportedProgram it translated (after its
decompositions) run in an FX interpreter that keeps every node's tensor outputs, keyed by FX
node name, the name the exporter writes into each ONNX node's metadata (its ``origin``)."""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fixport.core.foundation.comparison import to_numpy
from fixport.core.records.compare_result import ValueKey


@dataclass
class FxCapture:
    """The translated ExportedProgram as a function returning every FX node's tensor outputs."""

    program: torch.export.ExportedProgram

    def run(self, inputs: Sequence[torch.Tensor], device: str = "cpu",
            keep: Collection[ValueKey] | None = None) -> dict[ValueKey, np.ndarray]:
        """The FX nodes' tensor outputs (those in ``keep``); the interpreter frees each other value
        after its last use, so a slice of a big model's values costs no more than the slice."""
        values: dict[ValueKey, np.ndarray] = {}
        self._interpret(inputs, device, lambda key, value: values.__setitem__(key, to_numpy(value)), keep)
        return values

    def value_sizes(self, inputs: Sequence[torch.Tensor], device: str = "cpu") -> dict[ValueKey, int]:
        sizes: dict[ValueKey, int] = {}
        self._interpret(inputs, device, lambda key, value: sizes.__setitem__(key, value.nbytes), None)
        return sizes

    def _interpret(self, inputs: Sequence[torch.Tensor], device: str,
                   record: Callable[[ValueKey, torch.Tensor], None], keep: Collection[ValueKey] | None) -> None:
        class Recorder(torch.fx.Interpreter):
            def run_node(self, node: torch.fx.Node) -> Any:
                result = super().run_node(node)
                if node.op == "call_function":
                    outputs = result if isinstance(result, (tuple, list)) else (result,)
                    for index, value in enumerate(outputs):
                        if isinstance(value, torch.Tensor) and (keep is None or (node.name, index) in keep):
                            record((node.name, index), value)
                return result

        module = self.program.module()
        with torch.no_grad():
            Recorder(module).run(*[t.to(device) for t in inputs])
