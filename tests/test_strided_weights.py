"""Weights the optimizer folded as strided views are written through one contiguous copy each, and
the file holds the same bytes as onnx_ir's own element-by-element write."""
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as ir
import pytest
import torch

from fixport.core.exporters.dynamo.strided_weights import contiguous_copy, write_contiguously


@pytest.mark.parametrize("array", [
    np.arange(24, dtype=np.float32).reshape(4, 6).astype(ml_dtypes.bfloat16).T,
    np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(2, 0, 1),
    (np.arange(24).reshape(4, 6) % 3 == 0).T,
    np.arange(24, dtype=np.int64).reshape(4, 6)[::-1, ::2],
    np.array([["a", "bc"], ["d", "e"]], dtype=object).T,
], ids=["bfloat16 transposed", "float32 permuted", "bool transposed", "negative strides", "objects"])
def test_a_contiguous_copy_holds_the_same_values_in_c_order(array: np.ndarray) -> None:
    copy = contiguous_copy(array)
    assert copy.flags.c_contiguous and copy.dtype == array.dtype and copy.shape == array.shape
    assert copy.tobytes() == np.ascontiguousarray(array).tobytes()


class _Projection(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(32, 48)
        self.second = torch.nn.Linear(48, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.relu(self.first(x)))


@pytest.mark.slow
def test_a_bfloat16_export_saves_the_same_file_written_contiguously(tmp_path: Path) -> None:
    """torch.onnx's optimizer folds the transposed weights of a 3-D MatMul into strided numpy
    initializers; written contiguously, the saved weights are byte for byte onnx_ir's own."""
    torch.manual_seed(0)
    model = _Projection().to(torch.bfloat16).eval()
    program = torch.onnx.export(model, (torch.randn(1, 3, 32, dtype=torch.bfloat16),), dynamo=True, optimize=True,
                                verbose=False)
    program.save(str(tmp_path / "plain.onnx"), external_data=True)
    strided = [name for name, value in program.model.graph.initializers.items()
               if isinstance(value.const_value.raw, np.ndarray) and not value.const_value.raw.flags.c_contiguous]
    assert strided, "the optimizer no longer folds a weight's Transpose into a strided view"

    assert write_contiguously(program.model.graph) == len(strided)
    assert all(isinstance(program.model.graph.initializers[name].const_value, ir.LazyTensor) for name in strided)
    program.save(str(tmp_path / "contiguous.onnx"), external_data=True)

    assert (tmp_path / "contiguous.onnx.data").read_bytes() == (tmp_path / "plain.onnx.data").read_bytes()
    assert _without_locations(tmp_path / "contiguous.onnx") == _without_locations(tmp_path / "plain.onnx")


def _without_locations(path: Path) -> bytes:
    """The saved graph, each weight's data file name left out (it is the model's file name)."""
    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        kept = [entry for entry in tensor.external_data if entry.key != "location"]
        del tensor.external_data[:]
        tensor.external_data.extend(kept)
    return model.SerializeToString()
