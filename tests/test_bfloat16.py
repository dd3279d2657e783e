"""bfloat16 models check, fix, compare and export on CPU, where ONNX Runtime has no bfloat16
kernels for most ops: the session runs a widened copy and gives bfloat16 back (issue 20, precision)."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from fixport.core.onnx_io.bfloat16_runs import boundary_in_float32, casts_weights_at_use, widened
from fixport.core.onnx_io.onnx_model import OnnxModel, WeightsFolder, on_disk
from fixport.core.onnx_io.ort_session import create_session
from tests.conftest import slow_but_one

# aten::diff has no TorchScript symbolic; scaled_dot_product_attention with an explicit scale in
# bfloat16 once failed as torch wrote the model (a ComplexDouble Cast, see bfloat16_casts.py) and
# now exports as it is. The qkv unbind is the form the exporter fuses with its unpacking (a
# multi-output node the node capture must undo).
ATTENTION_MODEL = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(32, 96)

        def forward(self, x):
            q, k, v = self.qkv(x).view(1, 16, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
            mask = torch.ones(16, 16, dtype=torch.bool).tril()
            y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
            return torch.diff(y, dim=-1)

    def build():
        torch.manual_seed(0)
        return Attention().to(torch.bfloat16).eval(), (torch.randn(1, 16, 32, dtype=torch.bfloat16),)
"""


def _said(ran) -> str:
    return " ".join(ran.stdout.split())  # the report wraps its lines


@pytest.mark.parametrize("exporter", slow_but_one(["torchscript", "dynamo"], "torchscript"))
def test_a_bfloat16_model_is_fixed_on_its_nodes_compared_and_exported_in_bfloat16(cli, model_file, tmp_path,
                                                                                  exporter) -> None:
    path = model_file("attention_bf16.py", ATTENTION_MODEL)
    project = tmp_path / "fixes.fixport.json"
    fixed = cli("fix", str(path), "--auto", "--exporter", exporter, "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    said = _said(fixed)
    if exporter == "torchscript":
        assert "(export)" not in said  # the serializer's failure is traced to its node
        assert "fixed aten::diff" in said and "scaled_dot_product_attention" not in said
        assert "on the whole model" not in said.split("Nothing is left")[0].split("tried")[0]
        assert said.count("on the node alone") >= 1
    else:  # torch.export and torch_lib take both ops as they are
        assert "nothing to fix" in said
    fixes = ["--project", str(project)] if project.exists() else ["--exporter", exporter]
    compared = cli("compare", str(path), *fixes)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    said = _said(compared)
    assert "bfloat16" in said and "PASS" in said and "widened to float32" in said
    out = tmp_path / "model.onnx"
    exported = cli("export", str(path), *fixes, "-o", str(out))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    model = onnx.load(str(out))
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.BFLOAT16  # the fix kept the dtype
    from_file = cli("compare", str(path), "--onnx", str(out))  # the saved file, opened from its path
    assert from_file.returncode == 0, from_file.stdout + from_file.stderr
    assert "widened to float32" in _said(from_file)


def test_check_lists_only_the_op_without_a_symbolic_in_bfloat16_attention(cli, model_file) -> None:
    path = model_file("attention_bf16.py", ATTENTION_MODEL)
    ran = cli("check", str(path))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    said = _said(ran)
    assert "ComplexDouble" not in said and "1 unsupported node" in said
    assert "view_as_real" not in said  # the model has no complex values: that advice would mislead
    assert "aten::diff" in said and not re.search(r"\b0 ONNX nodes", said) and " ONNX nodes" in said


def _rounding_model() -> onnx.ModelProto:
    """float32 x, cast to bfloat16 (rounding), times a bfloat16 weight: bfloat16 out."""
    weight = numpy_helper.from_array(np.linspace(-2, 2, 6).astype(ml_dtypes.bfloat16).reshape(2, 3), "w")
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.BFLOAT16),
         helper.make_node("Mul", ["x16", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3])], initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _expected(x: np.ndarray, model: onnx.ModelProto) -> np.ndarray:
    weight = torch.from_numpy(numpy_helper.to_array(model.graph.initializer[0]).astype(np.float32))
    return (torch.from_numpy(x).bfloat16() * weight.bfloat16()).float().numpy()


def test_a_widened_session_rounds_where_the_graph_casts_and_returns_bfloat16() -> None:
    model = _rounding_model()
    x = np.full((2, 3), 1.00390625 + 2 ** -12, np.float32)  # not a bfloat16: the Cast must round it
    info = create_session(model, "cpu")
    (y,) = info.session.run(None, {"x": x})
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), _expected(x, model))
    assert any("widened to float32" in message for message in info.messages)


def _weights_on_disk(weight_is_an_output: bool = False) -> tuple[onnx.ModelProto, OnnxModel]:
    """The rounding model with a weight past the inline limit, in memory and held on disk."""
    model = _rounding_model()
    weights = onnx.ModelProto()
    weights.CopyFrom(model)
    weights.graph.initializer[0].CopyFrom(numpy_helper.from_array(
        np.linspace(-2, 2, 3000).astype(ml_dtypes.bfloat16).reshape(2, 1500), "w"))  # past the 1 KB inline limit
    for io_value in (*weights.graph.input, *weights.graph.output):
        io_value.type.tensor_type.shape.dim[1].dim_value = 1500
    if weight_is_an_output:
        weights.graph.output.append(helper.make_tensor_value_info("w", TensorProto.BFLOAT16, [2, 1500]))
    held = on_disk(weights, WeightsFolder())
    assert held.weights_on_disk and held.proto.graph.initializer[0].data_location == TensorProto.EXTERNAL
    return weights, held


def _runs_the_same(weights: onnx.ModelProto, held: OnnxModel) -> None:
    x = np.random.default_rng(0).standard_normal((2, 1500)).astype(np.float32)
    (from_disk, *_) = create_session(held, "cpu").session.run(None, {"x": x})
    (in_memory, *_) = create_session(OnnxModel(weights), "cpu").session.run(None, {"x": x})
    np.testing.assert_array_equal(from_disk.astype(np.float32), in_memory.astype(np.float32))
    np.testing.assert_array_equal(in_memory.astype(np.float32), _expected(x, weights))


def test_weights_on_disk_stay_bfloat16_and_are_cast_where_used(tmp_path) -> None:
    weights, held = _weights_on_disk()
    wide = widened(held)
    assert wide.base_dir == held.base_dir  # no second, float32 copy of the weights
    assert wide.proto.graph.initializer[0].data_type == TensorProto.BFLOAT16
    assert casts_weights_at_use(wide.proto) and not casts_weights_at_use(held.proto)
    assert [n.op_type for n in wide.proto.graph.node][0] == "Cast"
    _runs_the_same(weights, held)


def test_a_weight_that_is_also_an_output_is_widened_once_per_folder_and_runs_the_same(tmp_path) -> None:
    weights, held = _weights_on_disk(weight_is_an_output=True)
    first, second = widened(held), widened(held)
    assert not casts_weights_at_use(first.proto)
    assert first.base_dir == second.base_dir and first.base_dir != held.base_dir
    assert (first.base_dir / "weights.data").stat().st_size >= 2 * 3000  # float32: twice the bfloat16 bytes
    _runs_the_same(weights, held)


def test_the_boundary_copy_takes_and_gives_float32_and_keeps_bfloat16_inside() -> None:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])])
    model = OnnxModel(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    edged = boundary_in_float32(model).proto
    assert [i.type.tensor_type.elem_type for i in (*edged.graph.input, *edged.graph.output)] == [TensorProto.FLOAT] * 2
    assert [n.op_type for n in edged.graph.node] == ["Cast", "Identity", "Cast"]
    session = ort.InferenceSession(edged.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.array([1.5, -2.25, 3.296875], np.float32)  # bfloat16 values: exact through both casts
    (y,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, x)


def test_an_embeddings_rows_are_gathered_in_bfloat16_then_widened_and_run_the_same() -> None:
    """A Gather of a bfloat16 vocabulary widens the rows it gathered, not the whole table; a weight
    read by a MatMul is widened by a Cast of its own. The numbers are those of the weights widened whole."""
    vocabulary = np.linspace(-3, 3, 64 * 48).astype(ml_dtypes.bfloat16).reshape(64, 48)
    projection = np.linspace(1, -1, 48 * 40).astype(ml_dtypes.bfloat16).reshape(48, 40)
    nodes = [helper.make_node("Gather", ["vocabulary", "ids"], ["rows"]),  # as torch writes a bfloat16 model
             helper.make_node("Relu", ["rows"], ["relu"]),
             helper.make_node("MatMul", ["relu", "projection"], ["y"])]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3, 40])],
        [numpy_helper.from_array(vocabulary, "vocabulary"), numpy_helper.from_array(projection, "projection")]),
        opset_imports=[helper.make_opsetid("", 17)])
    held = on_disk(model, WeightsFolder())
    wide = widened(held)
    assert casts_weights_at_use(wide.proto)
    order = [(n.op_type, list(n.input)) for n in wide.proto.graph.node]
    gather = next(index for index, (op, _) in enumerate(order) if op == "Gather")
    assert order[gather][1][0] == "vocabulary" and order[gather + 1][0] == "Cast"  # its rows, widened after it
    assert not any(op == "Cast" and inputs == ["vocabulary"] for op, inputs in order)  # never the whole table
    assert ("Cast", ["projection"]) in order and ["relu", "projection__fixport_float32"] in [i for _, i in order]
    ids = np.array([[1, 5, 63], [0, 7, 7]], np.int64)
    (from_disk,) = create_session(held, "cpu").session.run(None, {"ids": ids})
    (in_memory,) = create_session(OnnxModel(model), "cpu").session.run(None, {"ids": ids})
    np.testing.assert_array_equal(from_disk.astype(np.float32), in_memory.astype(np.float32))
    expected = np.maximum(vocabulary.astype(np.float32)[ids], 0) @ projection.astype(np.float32)
    np.testing.assert_allclose(from_disk.astype(np.float32), expected, rtol=1e-2, atol=1e-2)
