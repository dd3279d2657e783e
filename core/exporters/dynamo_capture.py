"""The dynamo exporter's per-node capture: the ExportedProgram it translated (after its
decompositions) run in an FX interpreter that keeps every node's tensor outputs, keyed by FX
node name, the name the exporter writes into each ONNX node's metadata (its ``origin``)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fixport.core.model.compare_result import ValueKey
from fixport.core.model.output_stats import to_numpy


@dataclass
class FxCapture:
    """The translated ExportedProgram as a function returning every FX node's tensor outputs."""

    program: torch.export.ExportedProgram

    def run(self, inputs: Sequence[torch.Tensor], device: str = "cpu") -> dict[ValueKey, np.ndarray]:
        values: dict[ValueKey, np.ndarray] = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, node: torch.fx.Node) -> Any:
                result = super().run_node(node)
                if node.op == "call_function":
                    outputs = result if isinstance(result, (tuple, list)) else (result,)
                    for index, value in enumerate(outputs):
                        if isinstance(value, torch.Tensor):
                            values[(node.name, index)] = to_numpy(value)
                return result

        module = self.program.module()
        with torch.no_grad():
            Recorder(module).run(*[t.to(device) for t in inputs])
        return values
