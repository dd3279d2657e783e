"""Decomposition replay and sizes: computed sizes read from the trace at static shapes, size
arithmetic kept as graph ops under declared dynamic dims, and a warning naming the sizes a replay
holds for where torch's decomposition branches on them."""
from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

from fixport.symbolics.synthesis.decomposition import decomposition_template
from fixport.symbolics.synthesis.replay import ReplayConditionWarning

OPSET = 17


@contextmanager
def _replayed(kind: str) -> Iterator[None]:
    """``kind`` converted by the generated decomposition-replay template while the block runs."""
    namespace: dict = {}
    exec(compile(decomposition_template(kind), f"<replay {kind}>", "exec"), namespace)
    torch.onnx.register_custom_op_symbolic(kind, namespace["symbolic"], OPSET)
    try:
        yield
    finally:
        torch.onnx.unregister_custom_op_symbolic(kind, OPSET)


def _export(model: torch.nn.Module, example: torch.Tensor, dynamic_axes: dict | None,
            ) -> tuple[onnx.ModelProto, list[str]]:
    """The exported model and the replay warnings the export raised."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.onnx.export(model, (example,), buffer, opset_version=OPSET, input_names=["x"],
                          dynamic_axes=dynamic_axes, dynamo=False)
    said = [str(w.message) for w in caught if issubclass(w.category, ReplayConditionWarning)]
    return onnx.load_from_string(buffer.getvalue()), said


def _max_error(model: torch.nn.Module, exported: onnx.ModelProto, shape: tuple[int, ...]) -> float:
    session = ort.InferenceSession(exported.SerializeToString(), providers=["CPUExecutionProvider"])
    x = torch.randn(*shape)
    got = session.run(None, {"x": x.numpy()})[0]
    expected = model(x).detach().numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    return float(np.abs(got - expected).max())


class Differences(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.diff(x, dim=1) * 2


class PooledToAQuarter(torch.nn.Module):
    """Adaptive pooling to a size computed from the input's own."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width = x.shape[-2:]
        return F.adaptive_avg_pool2d(x, (height // 4, width // 4))


def test_under_dynamic_dims_the_replay_keeps_the_size_arithmetic_in_the_graph() -> None:
    model = Differences().eval()
    with _replayed("aten::diff"):
        exported, _ = _export(model, torch.randn(2, 9), {"x": {0: "batch", 1: "length"}})
    assert "Shape" in {node.op_type for node in exported.graph.node}  # the length is read, not folded
    for shape in ((2, 9), (3, 14), (1, 5)):
        assert _max_error(model, exported, shape) < 1e-6, shape


def test_at_static_shapes_a_size_computed_in_the_graph_is_read_from_the_trace() -> None:
    model = PooledToAQuarter().eval()
    with _replayed("aten::adaptive_avg_pool2d"):
        exported, said = _export(model, torch.randn(1, 3, 12, 12), None)
    assert said == []
    assert _max_error(model, exported, (1, 3, 12, 12)) < 1e-6


@pytest.mark.slow
def test_a_replay_that_branches_on_a_size_names_the_sizes_it_holds_for() -> None:
    model = torch.nn.AdaptiveAvgPool2d((7, 7)).eval()
    with _replayed("aten::adaptive_avg_pool2d"):
        exported, said = _export(model, torch.randn(1, 4, 30, 30), {"x": {2: "height", 3: "width"}})
    assert len(said) == 1 and "dim 2 of its input 0 from 30 to 34" in said[0], said
    assert _max_error(model, exported, (1, 4, 31, 33)) < 1e-6  # inside the range it names
    assert _max_error(model, exported, (1, 4, 45, 45)) > 1e-3  # and outside it, wrong, as it says
