"""A big export keeps its weights once, on disk: sessions, node analysis and saved files read them there.

The threshold (256 MB) is lowered to 1 kB, so small real exports take the path a real-size one takes.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import fixport.core.exporters.torchscript.exporter as torchscript
import fixport.core.onnx_io.external_data as external_data
import fixport.core.onnx_io.onnx_model as onnx_model
from fixport.core.comparison.compare_job import MATCHED_AT_SIZE_NOTE
from fixport.core.comparison.intermediates import group_submodel, with_all_node_outputs
from fixport.core.onnx_io.onnx_files import save_model, save_model_with_external_data
from fixport.core.onnx_io.onnx_graph import PROVENANCE_ATTRIBUTE, onnx_to_graph
from fixport.core.onnx_io.onnx_model import OnnxModel, WeightsFolder, on_disk
from fixport.core.onnx_io.ort_session import create_session, run_on_cpu
from fixport.core.records.compare_result import NodeError

SIZE = 1024  # float32 elements: 4 kB, above the lowered threshold
LINEAR_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(64, 64)
            self.second = torch.nn.Linear(64, 32)

        def forward(self, x):
            return self.second(torch.relu(self.first(x)))

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(2, 64),)
"""


def _model(tagged: bool = False) -> onnx.ModelProto:
    """y = (x + w) * 2, w big enough to go to disk; ``tagged``: the Add's provenance, as an export reads it."""
    weight = numpy_helper.from_array(np.arange(SIZE, dtype=np.float32), "w")
    two = numpy_helper.from_array(np.array([2.0], dtype=np.float32), "two")  # small: stays inline
    add = helper.make_node("Add", ["x", "w"], ["sum"], name="add")
    if tagged:
        add.attribute.append(helper.make_attribute(PROVENANCE_ATTRIBUTE, "add_key"))
    mul = helper.make_node("Mul", ["sum", "two"], ["y"], name="mul")
    graph = helper.make_graph([add, mul], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SIZE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SIZE])], [weight, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: OnnxModel | onnx.ModelProto) -> np.ndarray:
    run = run_on_cpu(model, ["x"], [np.ones(SIZE, dtype=np.float32)])
    assert run.error is None, run.error
    return run.outputs[0]


def test_big_weights_go_to_disk_and_the_proto_keeps_references(small_threshold: Path) -> None:
    exported = on_disk(_model())
    assert exported.weights_on_disk
    big, small = exported.proto.graph.initializer
    assert big.data_location == TensorProto.EXTERNAL and not big.raw_data
    assert small.data_location == TensorProto.DEFAULT and small.raw_data
    assert exported.proto.ByteSize() < SIZE
    np.testing.assert_array_equal(_run(exported), _run(_model()))
    folder = exported.base_dir
    exported.release()
    assert not folder.exists()


def test_small_models_stay_whole_in_memory() -> None:
    exported = on_disk(_model())
    assert not exported.weights_on_disk and exported.proto == _model()


def test_half_precision_weights_count_as_the_float32_a_cpu_session_holds(monkeypatch) -> None:
    """600 bytes of float16 weights pass a 1000-byte threshold (a CPU session holds them as 1200
    bytes of float32); 600 bytes of float32 do not."""
    monkeypatch.setattr(onnx_model, "WEIGHTS_ON_DISK_ABOVE_BYTES", 1000)
    for dtype, goes in ((np.float16, True), (np.float32, False)):
        model = _model()
        model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.zeros(600 // np.dtype(dtype).itemsize, dtype),
                                                                    "w"))
        exported = on_disk(model)
        assert exported.weights_on_disk == goes, dtype
        exported.release()


def test_weights_on_disk_save_as_one_file_equal_to_the_model(small_threshold: Path, tmp_path: Path) -> None:
    written = save_model(on_disk(_model()), tmp_path / "m.onnx")
    assert written == [tmp_path / "m.onnx"]
    assert onnx.load(str(tmp_path / "m.onnx"), load_external_data=False) == _model()


def test_weights_on_disk_save_with_external_data_above_the_protobuf_limit(small_threshold: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    monkeypatch.setattr(external_data, "PROTOBUF_LIMIT_BYTES", 1000)
    written = save_model(on_disk(_model()), tmp_path / "big.onnx")
    assert [p.name for p in written] == ["big.onnx", "big.onnx.data"]
    reloaded = onnx.load(str(tmp_path / "big.onnx")).graph.initializer[0]
    np.testing.assert_array_equal(numpy_helper.to_array(reloaded), np.arange(SIZE, dtype=np.float32))
    session = ort.InferenceSession(str(tmp_path / "big.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": np.ones(SIZE, dtype=np.float32)})[0], _run(_model()))


def _two_weight_model() -> onnx.ModelProto:
    """y = (x + w) * v, both weights big enough to go to disk."""
    first = numpy_helper.from_array(np.arange(SIZE, dtype=np.float32), "w")
    second = numpy_helper.from_array(np.linspace(-1, 1, SIZE, dtype=np.float32), "v")
    nodes = [helper.make_node("Add", ["x", "w"], ["sum"]), helper.make_node("Mul", ["sum", "v"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SIZE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SIZE])], [first, second])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_weights_file_the_model_fills_is_copied_whole_to_the_saved_data(small_threshold: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """The saved data is the export's weights file byte for byte (the kernel copies it, no tensor
    read through Python), the tensors keep their offsets, and the saved pair runs as the model."""
    exported = on_disk(_two_weight_model())

    def read_through_python(*_args):
        raise AssertionError("a tensor was copied through Python")

    monkeypatch.setattr(external_data, "read_external_chunks", read_through_python)
    source = exported.base_dir / exported.proto.graph.initializer[0].external_data[0].value
    written = save_model_with_external_data(exported, tmp_path / "prefill.onnx")
    assert [p.name for p in written] == ["prefill.onnx", "prefill.onnx.data"]
    assert (tmp_path / "prefill.onnx.data").read_bytes() == source.read_bytes()
    saved = onnx.load(str(tmp_path / "prefill.onnx"), load_external_data=False)
    for tensor, before in zip(saved.graph.initializer, exported.proto.graph.initializer):
        entries = {entry.key: entry.value for entry in tensor.external_data}
        assert entries["location"] == "prefill.onnx.data"
        assert entries["offset"] == {entry.key: entry.value for entry in before.external_data}["offset"]
    session = ort.InferenceSession(str(tmp_path / "prefill.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": np.ones(SIZE, dtype=np.float32)})[0],
                                  _run(_two_weight_model()))


def test_a_copy_only_fixport_reads_links_the_weights_file_and_a_users_copy_does_not(small_threshold: Path,
                                                                                    tmp_path: Path) -> None:
    """check's copy of a component for the next one's generation check is the export's own file,
    linked (no gigabytes written again); a file the user gets is a copy of its own, as is one that
    gets more tensors written into it."""
    exported = on_disk(_two_weight_model())
    source = exported.base_dir / exported.proto.graph.initializer[0].external_data[0].value
    save_model_with_external_data(exported, tmp_path / "kept" / "prefill.onnx", link_weights=True)
    save_model_with_external_data(exported, tmp_path / "out" / "prefill.onnx")
    assert (tmp_path / "kept" / "prefill.onnx.data").stat().st_ino == source.stat().st_ino
    assert (tmp_path / "out" / "prefill.onnx.data").stat().st_ino != source.stat().st_ino
    for folder in ("kept", "out"):
        session = ort.InferenceSession(str(tmp_path / folder / "prefill.onnx"), providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(session.run(None, {"x": np.ones(SIZE, dtype=np.float32)})[0],
                                      _run(_two_weight_model()))

    size = source.stat().st_size
    extra = numpy_helper.from_array(np.full(SIZE, 3.0, dtype=np.float32), "extra")  # inline: written when saved
    exported.proto.graph.initializer.append(extra)
    save_model_with_external_data(exported, tmp_path / "grown" / "prefill.onnx", link_weights=True)
    assert (tmp_path / "grown" / "prefill.onnx.data").stat().st_ino != source.stat().st_ino
    assert (tmp_path / "grown" / "prefill.onnx.data").stat().st_size > size == source.stat().st_size


def test_a_weights_file_holding_more_than_the_model_names_is_saved_tensor_by_tensor(small_threshold: Path,
                                                                                    tmp_path: Path) -> None:
    """A fix dropped a weight the file still holds: the saved data has only the one the model
    names, not the other's bytes."""
    exported = on_disk(_two_weight_model())
    source = exported.base_dir / exported.proto.graph.initializer[0].external_data[0].value
    model = exported.proto
    del model.graph.initializer[1]
    model.graph.node[1].input[1] = "sum"
    save_model_with_external_data(exported, tmp_path / "fixed.onnx")
    assert (tmp_path / "fixed.onnx.data").stat().st_size < source.stat().st_size
    reloaded = onnx.load(str(tmp_path / "fixed.onnx")).graph.initializer[0]
    np.testing.assert_array_equal(numpy_helper.to_array(reloaded), np.arange(SIZE, dtype=np.float32))


def test_copies_and_parts_of_the_graph_read_the_same_weights(small_threshold: Path) -> None:
    exported = on_disk(_model())
    all_outputs = create_session(with_all_node_outputs(exported)).session
    values = dict(zip([o.name for o in all_outputs.get_outputs()],
                      all_outputs.run(None, {"x": np.zeros(SIZE, dtype=np.float32)})))
    np.testing.assert_array_equal(values["sum"], np.arange(SIZE, dtype=np.float32))
    error = NodeError(onnx_node="add", onnx_kind="onnx::Add", output="sum", source_node="add_key",
                      source_kind="aten::add", scope="", source="", template="", shape=(SIZE,),
                      dtype="float32", max_abs=0.0, mean_abs=0.0, max_rel=0.0, rtol=0.0, atol=0.0, exceeds=True)
    submodel, feeds = group_submodel(exported, onnx_to_graph(_model(tagged=True)), error,
                                     {"x": np.ones(SIZE, dtype=np.float32)})
    assert submodel.base_dir == exported.base_dir
    (output,) = create_session(submodel).session.run(None, feeds)
    np.testing.assert_array_equal(output, np.arange(SIZE, dtype=np.float32) + 1)


def test_the_folder_is_removed_only_by_the_process_that_made_it(small_threshold: Path) -> None:
    folder = WeightsFolder()
    pid = os.fork()
    if pid == 0:  # a forked trial dropping its copy of the object
        folder.release()
        os._exit(0)
    os.waitpid(pid, 0)
    assert folder.path.is_dir()
    folder.release()
    assert not folder.path.exists()


def test_check_compare_and_save_read_the_weights_from_disk(small_threshold: Path, model_file, tmp_path: Path,
                                                           monkeypatch) -> None:
    """Analysis (ORT check, output comparison, saved file) and compare (outputs, node by node, and an
    --onnx file with external data) on an export whose weights are on disk, torch writing a file as
    it does for a model over 1 GB; every temporary weights folder is gone afterwards."""
    from fixport.core.analysis.analysis import analyze
    from fixport.core.comparison.compare_job import compare
    from fixport.core.records.requests import AnalyzeRequest, CompareRequest
    from fixport.core.records.results import ModelRequest

    monkeypatch.setattr(torchscript, "IN_MEMORY_EXPORT_LIMIT_BYTES", 0)
    path = model_file("linear.py", LINEAR_MODEL)
    saved = tmp_path / "linear.onnx"
    analysis = analyze(AnalyzeRequest(ModelRequest(str(path)), output=str(saved)))
    assert analysis.unsupported == [] and analysis.output_max_abs is not None
    assert [Path(p).name for p in analysis.saved_files] == ["linear.onnx"]
    assert all(t.data_location == TensorProto.DEFAULT for t in onnx.load(str(saved)).graph.initializer)

    result = compare(CompareRequest(ModelRequest(str(path)), runs=2))
    assert result.passed and result.node_analysis is None and MATCHED_AT_SIZE_NOTE in result.messages

    monkeypatch.setattr(external_data, "PROTOBUF_LIMIT_BYTES", 1000)
    external = tmp_path / "external" / "linear.onnx"
    analyze(AnalyzeRequest(ModelRequest(str(path)), output=str(external)))
    assert (external.parent / "linear.onnx.data").is_file()
    from_file = compare(CompareRequest(ModelRequest(str(path)), onnx_path=str(external), analyze_nodes=False))
    assert from_file.passed
    assert not list(small_threshold.glob(f"{onnx_model.FOLDER_PREFIX}*"))


def _transposed_weight_model() -> onnx.ModelProto:
    """y = x @ w^T, the Transpose of the weight a node of its own (as an unoptimised export has it)."""
    weight = numpy_helper.from_array(np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 1000, "w")
    nodes = [helper.make_node("Transpose", ["w"], ["w_t"], name="t"),
             helper.make_node("MatMul", ["x", "w_t"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_session_run_once_can_leave_the_weights_transposes_unfolded(tmp_path: Path) -> None:
    """ONNX Runtime folds Transpose(w) into a second weight when the session is made; the per-node
    analysis of a big model runs its session once and asks it not to (the Transpose runs, or is
    fused into the MatMul, reading the one weight)."""
    x = np.ones((2, 32), dtype=np.float32)
    ops, outputs = {}, {}
    for fold in (True, False):
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / f"folded_{fold}.onnx")
        session = create_session(_transposed_weight_model(), extra_session_options=options,
                                 fold_constants=fold).session
        (outputs[fold],) = session.run(None, {"x": x})
        ops[fold] = [node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node]
    assert ops[True] == ["MatMul"] and ops[False] in (["Transpose", "MatMul"], ["FusedMatMul"])
    np.testing.assert_array_equal(outputs[True], outputs[False])


def test_values_made_from_the_weights_alone_are_not_fetched_but_made_where_a_group_needs_them(
        small_threshold: Path) -> None:
    """y = x @ w^T: the transposed weight is as big as the weight; per-node analysis leaves it out
    of its run, and the MatMul's group alone makes it from the weight again."""
    model = _transposed_weight_model()
    weight = model.graph.initializer[0]
    exported = on_disk(model)
    assert [o.name for o in with_all_node_outputs(exported).proto.graph.output] == ["y"]
    tagged = onnx.ModelProto()
    tagged.CopyFrom(model)
    for node, origin in zip(tagged.graph.node, ["t_key", "mm_key"]):
        node.attribute.append(helper.make_attribute(PROVENANCE_ATTRIBUTE, origin))
    error = NodeError(onnx_node="mm", onnx_kind="onnx::MatMul", output="y", source_node="mm_key",
                      source_kind="aten::matmul", scope="", source="", template="", shape=(2, 32),
                      dtype="float32", max_abs=0.0, mean_abs=0.0, max_rel=0.0, rtol=0.0, atol=0.0, exceeds=True)
    x = np.ones((2, 32), dtype=np.float32)
    submodel, feeds = group_submodel(exported, onnx_to_graph(tagged), error, {"x": x})
    assert [node.op_type for node in submodel.proto.graph.node] == ["Transpose", "MatMul"]
    (output,) = create_session(submodel).session.run(None, feeds)
    np.testing.assert_allclose(output, x @ numpy_helper.to_array(weight).T, rtol=1e-6)


def test_the_folders_of_a_process_that_is_gone_are_removed(small_threshold: Path) -> None:
    """A worker stopped on a timeout never runs its finalizers: the next folder made removes its own."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = small_threshold / f"{onnx_model.FOLDER_PREFIX}{gone.stdout.strip()}-abc"
    orphan.mkdir()
    (orphan / onnx_model.WEIGHTS_FILE).write_bytes(b"weights")
    folder = WeightsFolder()
    assert not orphan.exists() and folder.path.is_dir()
    folder.release()


MIXED_PARAMETERS_MODEL = """
    import torch

    class Model(torch.nn.Module):
        '''Parameters whose names sort unlike their use, a tied weight, a small bias (stays inline),
        float16, int64 and bool buffers, a Linear whose weight constant folding transposes.'''

        def __init__(self):
            super().__init__()
            self.z_embed = torch.nn.Embedding(40, 32)
            self.a_proj = torch.nn.Linear(32, 40, bias=False)
            self.a_proj.weight = self.z_embed.weight  # tied: one initializer
            self.m_scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, 32))
            self.register_buffer("halves", torch.linspace(-1, 1, 32 * 40).reshape(40, 32).half())
            self.register_buffer("offsets", torch.arange(40 * 32).reshape(40, 32))
            self.register_buffer("keep", torch.arange(40 * 32).reshape(40, 32) % 3 == 0)

        def forward(self, ids):
            hidden = self.z_embed(ids) * self.m_scale
            logits = self.a_proj(hidden)
            extra = (self.halves.float() + self.offsets.float() * self.keep.float()).sum(-1)
            return logits + extra

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.tensor([[1, 5, 7, 39]]),)
"""


@pytest.mark.parametrize("folding", [True, False])
def test_a_file_export_writes_its_weights_from_torch_as_the_full_export_would(
        small_threshold: Path, model_file, monkeypatch, folding: bool) -> None:
    """A model torch writes to a file (over 1 GB) gets its parameters from torch's tensors straight into
    the weights file (torch's encoder sees none): the same graph, initializers and weight bytes as
    the model read back from torch's full encoding, with and without constant folding."""
    from contextlib import nullcontext
    from dataclasses import replace

    from fixport.core.exporters.choice import exporter_for
    from fixport.core.loaders.loading import load_model
    from fixport.core.project.export_options import resolve_export_options

    monkeypatch.setattr(torchscript, "IN_MEMORY_EXPORT_LIMIT_BYTES", 0)
    loaded = load_model(model_file("mixed.py", MIXED_PARAMETERS_MODEL))
    options = replace(resolve_export_options(loaded.settings, {}), do_constant_folding=folding)
    exporter = exporter_for("torchscript")
    written = exporter.export(loaded, options, run_check=False)
    monkeypatch.setattr(torchscript, "weights_written_to", lambda _path: nullcontext())
    encoded = exporter.export(loaded, options, run_check=False)

    assert written.model.proto == encoded.model.proto
    assert written.onnx_graph == encoded.onnx_graph
    weights = (written.model.base_dir / onnx_model.WEIGHTS_FILE).read_bytes()
    assert weights == (encoded.model.base_dir / onnx_model.WEIGHTS_FILE).read_bytes()
    initializers = {t.name: t for t in written.model.proto.graph.initializer}
    assert any(t.data_location == TensorProto.EXTERNAL for t in initializers.values())
    assert any(t.data_location == TensorProto.DEFAULT and t.raw_data for t in initializers.values())
    assert not {value.name for value in written.model.proto.graph.input} & set(initializers)
    inputs = [t.numpy() for t in loaded.example_inputs]
    np.testing.assert_array_equal(_outputs(written.model, loaded.input_names, inputs),
                                  _outputs(encoded.model, loaded.input_names, inputs))


def _outputs(model: OnnxModel, names, inputs) -> np.ndarray:
    run = run_on_cpu(model, names, inputs)
    assert run.error is None, run.error
    return run.outputs[0]


@pytest.mark.slow
def test_a_dynamo_export_writes_its_weights_from_torch_straight_to_disk(small_threshold: Path, model_file) -> None:
    """torch.export's route too: the translated model's weights go to the folder from torch's tensors
    (no proto holding them), check and compare read them there, and the folders go afterwards."""
    from fixport.core.comparison.compare_job import compare
    from fixport.core.exporters.choice import exporter_for
    from fixport.core.loaders.loading import load_model
    from fixport.core.project.export_options import ExportOptions
    from fixport.core.records.requests import CompareRequest
    from fixport.core.records.results import ModelRequest

    path = model_file("linear.py", LINEAR_MODEL)
    result = exporter_for("dynamo").export(load_model(path, trust=True), ExportOptions(opset=17))
    assert result.unsupported == [] and result.model.weights_on_disk
    assert all(t.data_location == TensorProto.EXTERNAL for t in result.model.proto.graph.initializer
               if t.name.endswith("weight"))
    assert any(node.metadata_props for node in result.model.proto.graph.node)  # provenance kept
    del result
    compared = compare(CompareRequest(ModelRequest(str(path)), runs=2, options={"exporter": "dynamo"}))
    assert compared.passed and compared.node_analysis is None and MATCHED_AT_SIZE_NOTE in compared.messages
    import gc

    gc.collect()
    assert not list(small_threshold.glob(f"{onnx_model.FOLDER_PREFIX}*"))
