"""Saved models pass the full ONNX checker and are written atomically; big ones use external data."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import fixport.core.onnx_io.external_data as external_data
import fixport.core.onnx_io.onnx_files as onnx_files
from fixport.core.onnx_io.ort_session import run_on_cpu
from fixport.core.words.errors import ExportError


def _model(weight_elements: int = 1024) -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.arange(weight_elements, dtype=np.float32), "w")
    node = helper.make_node("Add", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [weight_elements])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [weight_elements])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_small_model_is_one_checked_file(tmp_path: Path) -> None:
    written = onnx_files.save_model(_model(), tmp_path / "m.onnx")
    assert written == [tmp_path / "m.onnx"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_model_over_the_protobuf_limit_is_saved_with_external_data(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(external_data, "PROTOBUF_LIMIT_BYTES", 1000)  # stands in for 2 GB
    model = _model()
    written = onnx_files.save_model(model, tmp_path / "big.onnx")
    assert [p.name for p in written] == ["big.onnx", "big.onnx.data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.onnx", "big.onnx.data"]
    assert (tmp_path / "big.onnx").stat().st_size < 1000  # the weights are in the .data file
    loaded = onnx.load(str(tmp_path / "big.onnx"))
    assert numpy_helper.to_array(loaded.graph.initializer[0])[-1] == 1023
    assert model == _model()  # saving left the model in memory whole


def test_a_session_opens_a_model_over_the_protobuf_limit(monkeypatch) -> None:
    monkeypatch.setattr(external_data, "PROTOBUF_LIMIT_BYTES", 1000)
    model = _model()
    with external_data.session_source(model) as source:
        assert isinstance(source, str)  # a path: the bytes could not be serialised at real size
    run = run_on_cpu(model, ["x"], [np.ones(1024, dtype=np.float32)])
    assert run.error is None and run.outputs[0][-1] == 1024
    assert model == _model()


def test_invalid_model_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    model = _model()
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(ExportError, match="ONNX checker"):
        onnx_files.save_model(model, tmp_path / "bad.onnx")
    assert not any(tmp_path.iterdir())


def test_a_big_models_graph_is_checked_without_its_weights(tmp_path: Path, monkeypatch) -> None:
    """Above SESSION_FROM_FILE_ABOVE_BYTES the checker gets the graph, not the weights' bytes (at
    real size, gigabytes): a bad node or a weight of the wrong type is still refused."""
    monkeypatch.setattr(onnx_files, "SESSION_FROM_FILE_ABOVE_BYTES", 1000)
    written = onnx_files.save_model(_model(), tmp_path / "m.onnx")
    assert written == [tmp_path / "m.onnx"]
    onnx.checker.check_model(str(written[0]), full_check=True)
    assert run_on_cpu(onnx.load(str(written[0])), ["x"], [np.ones(1024, dtype=np.float32)]).outputs[0][-1] == 1024

    bad_node = _model()
    bad_node.graph.node[0].op_type = "NoSuchOp"
    wrong_type = _model()
    wrong_type.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.arange(1024, dtype=np.int64), "w"))
    for number, model in enumerate((bad_node, wrong_type)):
        with pytest.raises(ExportError, match="ONNX checker"):
            onnx_files.save_model(model, tmp_path / f"bad{number}.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_check_fix_and_save_take_the_external_data_path_end_to_end(monkeypatch, model_file, tmp_path: Path) -> None:
    """The 2 GB limit lowered to 1 kB: analysis, fix --auto's node trials and whole-model check,
    and the saved file all go through external data, as a real-size model does."""
    from fixport.core.fixing.auto_fix import auto_fix
    from fixport.core.records.requests import AutoFixRequest
    from fixport.core.records.results import ModelRequest

    path = model_file("wide.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(64, 64)

            def forward(self, x):
                return torch.diff(self.proj(x), dim=-1)

        def build():
            torch.manual_seed(0)
            return Model().eval(), (torch.randn(2, 64),)
    """)
    monkeypatch.setattr(external_data, "PROTOBUF_LIMIT_BYTES", 1024)
    output = tmp_path / "fixed.onnx"
    result = auto_fix(AutoFixRequest(ModelRequest(str(path)), output=str(output)))
    assert result.after.unsupported == [] and result.choices
    assert result.after.output_max_abs is not None  # ONNX Runtime ran the whole model, from a path
    assert [Path(p).name for p in result.after.saved_files] == ["fixed.onnx", "fixed.onnx.data"]
    assert output.stat().st_size < (tmp_path / "fixed.onnx.data").stat().st_size
    import onnxruntime as ort

    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    assert session.get_inputs()
