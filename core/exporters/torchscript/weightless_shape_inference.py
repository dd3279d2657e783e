"""torch.onnx's shape inference over a TorchScript export, given the small parameters only.

After conversion the TorchScript exporter runs ONNX shape inference over the whole graph twice, and
hands it every parameter: it reads each weight and copies the ones a node takes, inside one C++ call
that holds the GIL, so the thread that hands weight pages back
(:class:`~fixport.core.onnx_io.resident_weights.WeightPagesHandedBack`) cannot run meanwhile. On a
1.5 B bfloat16 model that was the export's peak: the 3.1 GB of mapped weights resident again, plus
1.8 GB of copies. A weight's shape and type, which are all inference needs of it, are on the graph's
input; the values that decide shapes (a Reshape's target, a Slice's ends, a size kept as a buffer)
are small tensors, and those it still gets.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

SHAPE_VALUE_MAX_ELEMENTS = 4096  # a parameter this small still reaches inference with its values


@contextmanager
def shape_inference_without_weights() -> Iterator[None]:
    """TorchScript exports inside infer shapes with the parameters of at most SHAPE_VALUE_MAX_ELEMENTS."""
    original = torch._C._jit_pass_onnx_graph_shape_type_inference

    def infer(graph: Any, params_dict: dict[str, Any], opset: int) -> Any:
        return original(graph, {name: value for name, value in params_dict.items() if _small(value)}, opset)

    torch._C._jit_pass_onnx_graph_shape_type_inference = infer
    try:
        yield
    finally:
        torch._C._jit_pass_onnx_graph_shape_type_inference = original


def _small(value: Any) -> bool:
    return not isinstance(value, torch.Tensor) or value.numel() <= SHAPE_VALUE_MAX_ELEMENTS
