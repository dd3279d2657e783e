"""ONNX Runtime reads a big export's weights from the mapping torch holds, not a second one (issue 20).

The weights-on-disk threshold is lowered to 1 kB, so small real exports take a real-size one's path.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fixport.core.exporters.choice import exporter_for
from fixport.core.loaders.loading import load_model
from fixport.core.onnx_io.ort_session import create_session
from fixport.core.onnx_io.shared_weights import mapped_file, shared_initializers
from fixport.core.project.export_options import ExportOptions

MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        layers = [torch.nn.Linear(1024, 1024) for _ in range(WIDE)]
        return torch.nn.Sequential(*layers).eval(), (torch.randn(2, 1024),)
"""
MB = 1024**2


def _exported(model_file, layers: int):
    loaded = load_model(model_file("shared.py", MODEL.replace("WIDE", str(layers))), trust=True)
    result = exporter_for("dynamo").export(loaded, ExportOptions(opset=17))
    assert result.unsupported == [] and result.model.weights_on_disk
    return loaded, result.model


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.slow
def test_a_session_over_the_exported_file_reads_torchs_mapping_and_counts_it_once(small_threshold, model_file) -> None:
    """Every weight is handed over without a copy (its OrtValue points into torch's mapping), the
    session computes torch's outputs, and running it leaves resident memory about where torch's
    forward left it: 64 MB of weights, counted twice, would add 64 MB."""
    loaded, model = _exported(model_file, 16)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()  # torch has read every weight
    shared = shared_initializers(model.proto, model.base_dir)
    weights = [tensor for tensor in model.proto.graph.initializer if tensor.name in shared]
    assert len(weights) == 32  # 16 weights and 16 biases
    (location,) = {entry.value for tensor in weights for entry in tensor.external_data if entry.key == "location"}
    data, _as_written = mapped_file(model.base_dir / location)
    start, end = data.ctypes.data, data.ctypes.data + data.size
    assert all(start <= value.data_ptr() < end for value in shared.values())

    before = _resident_bytes()
    session = create_session(model).session
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    grown = _resident_bytes() - before
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    assert grown < 32 * MB, f"resident memory grew {grown / MB:.0f} MB over 64 MB of weights torch already holds"


def test_a_weight_torch_changed_in_place_is_read_from_the_file(small_threshold, model_file) -> None:
    """Copy-on-write keeps the file as exported; a weight torch then changed in place is not shared,
    so ONNX Runtime runs the exported model, not torch's changed one."""
    loaded, model = _exported(model_file, 2)
    inputs = loaded.example_inputs[0].numpy()
    session = create_session(model).session
    (exported,) = session.run(None, {session.get_inputs()[0].name: inputs})
    first = loaded.module[0]
    with torch.no_grad():
        first.bias.add_(1.0)

    shared = shared_initializers(model.proto, model.base_dir)
    assert len(shared) == 3  # the changed bias is left to ONNX Runtime
    session = create_session(model).session
    (again,) = session.run(None, {session.get_inputs()[0].name: inputs})
    np.testing.assert_array_equal(again, exported)
