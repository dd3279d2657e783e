"""After a big export, torch's weights are the file the export wrote, not a second copy (issue 20).

The weights-on-disk threshold is lowered to 1 kB, so small real exports take a real-size one's path.
"""
from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from torch.multiprocessing.reductions import StorageWeakRef

import fixport.core.onnx_io.onnx_model as onnx_model
from fixport.core.exporters.choice import exporter_for
from fixport.core.exporters.dynamo.mapped_weights import WeightSource, map_from_file
from fixport.core.loaders.loading import load_model
from fixport.core.project.export_options import ExportOptions

MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 64)
            self.first = torch.nn.Linear(64, 64)
            self.second = torch.nn.Linear(64, 32)

        def forward(self, ids, x):
            return self.second(torch.relu(self.first(x) + self.embed(ids)))

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.tensor([[3, 7]]), torch.randn(1, 2, 64))  # 3-D: MatMul, weights transposed
"""
WEIGHTS = ("embed.weight", "first.weight", "second.weight")


def _weights_file(model: onnx_model.OnnxModel) -> Path:
    (location,) = {entry.value for tensor in model.proto.graph.initializer for entry in tensor.external_data
                   if entry.key == "location"}
    assert model.base_dir is not None
    return model.base_dir / location


@pytest.mark.slow
def test_a_big_dynamo_export_leaves_torch_one_copy_of_its_weights_the_file(small_threshold: Path,
                                                                           model_file) -> None:
    """The weights torch held before are freed (the Linear weights were written transposed, as the
    optimizer folds them), torch computes the same outputs from the file, before and after the file
    is removed, and the model exports again with either exporter."""
    loaded = load_model(model_file("mapped.py", MODEL), trust=True)
    parameters = dict(loaded.module.named_parameters())
    before = {name: StorageWeakRef(parameters[name].untyped_storage()) for name in WEIGHTS}
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs)

    result = exporter_for("dynamo").export(loaded, ExportOptions(opset=17))
    assert result.unsupported == [] and result.model.weights_on_disk
    file_bytes = _weights_file(result.model).stat().st_size
    gc.collect()
    for name in WEIGHTS:
        assert before[name].expired(), f"torch's own copy of {name} is still held"
        assert parameters[name].untyped_storage().nbytes() == file_bytes, f"{name} is not mapped from the file"
    assert not parameters["second.weight"].is_contiguous()  # a view of the transposed bytes the file holds
    with torch.no_grad():
        torch.testing.assert_close(loaded.module(*loaded.example_inputs), expected, rtol=1e-6, atol=1e-6)

    result.model.release()
    with torch.no_grad():
        torch.testing.assert_close(loaded.module(*loaded.example_inputs), expected, rtol=1e-6, atol=1e-6)
    for exporter in ("dynamo", "torchscript"):
        again = exporter_for(exporter).export(loaded, ExportOptions(opset=17))
        assert again.unsupported == [], exporter
        again.model.release()


@pytest.mark.slow
def test_a_later_export_maps_the_weights_again_and_the_earlier_file_goes(small_threshold: Path, model_file) -> None:
    """compare's per-node export (no constant folding) after its first export: torch's weights,
    transposed views of the first file, are mapped from the second, so the first is let go."""
    loaded = load_model(model_file("mapped.py", MODEL), trust=True)
    parameters = dict(loaded.module.named_parameters())
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs)
    first = exporter_for("dynamo").export(loaded, ExportOptions(opset=17))
    assert not parameters["second.weight"].is_contiguous()  # a transposed view of the first file
    first_file = StorageWeakRef(parameters["second.weight"].untyped_storage())
    first.model.release()

    second = exporter_for("dynamo").export(loaded, ExportOptions(opset=17, do_constant_folding=False),
                                           run_check=False)
    gc.collect()
    assert first_file.expired(), "a weight still views the first export's file"
    file_bytes = _weights_file(second.model).stat().st_size
    for name in WEIGHTS:
        assert parameters[name].untyped_storage().nbytes() == file_bytes, f"{name} is not mapped from the second file"
    with torch.no_grad():
        torch.testing.assert_close(loaded.module(*loaded.example_inputs), expected, rtol=1e-6, atol=1e-6)
    second.model.release()


def _model_with_external(names_and_bytes: list[tuple[str, bytes, list[int], int]], folder: Path) -> onnx.ModelProto:
    """A graph of initializers only, each written to one file at its offset (name, bytes, dims, offset)."""
    data = bytearray()
    tensors = []
    for name, raw, dims, offset in names_and_bytes:
        data.extend(b"\0" * (offset - len(data)))
        data.extend(raw)
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "w.bin"), ("offset", str(offset)), ("length", str(len(raw)))):
            tensor.external_data.add(key=key, value=value)
        tensors.append(tensor)
    (folder / "w.bin").write_bytes(bytes(data))
    graph = helper.make_graph([], "g", [], [], tensors)
    return helper.make_model(graph)


def test_only_a_tensors_own_bytes_at_an_aligned_offset_are_mapped(tmp_path: Path) -> None:
    same = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    transposed = torch.arange(12, dtype=torch.float32).reshape(3, 4) * 2
    other = torch.ones(3, 4)
    unaligned = torch.full((3, 4), 5.0)
    model = _model_with_external([
        ("same", same.numpy().tobytes(), [3, 4], 0),
        ("transposed_t", transposed.t().contiguous().numpy().tobytes(), [4, 3], 64),
        ("other", np.zeros((3, 4), np.float32).tobytes(), [3, 4], 128),  # not the tensor's bytes
        ("unaligned", unaligned.numpy().tobytes(), [3, 4], 196),
    ], tmp_path)
    sources = {"same": WeightSource(same), "transposed_t": WeightSource(transposed, (1, 0)),
               "other": WeightSource(other), "unaligned": WeightSource(unaligned)}
    values = {name: source.tensor.clone() for name, source in sources.items()}

    assert map_from_file(sources, model, tmp_path) == 2 * 48
    file_bytes = (tmp_path / "w.bin").stat().st_size
    mapped = {name for name, source in sources.items() if source.tensor.untyped_storage().nbytes() == file_bytes}
    assert mapped == {"same", "transposed_t"}
    for name, source in sources.items():
        torch.testing.assert_close(source.tensor, values[name], rtol=0, atol=0)
    same.add_(1)  # copy-on-write: the file is not changed
    assert (tmp_path / "w.bin").read_bytes()[:4] == np.float32(0).tobytes()


def test_a_float16_weight_written_transposed_keeps_torchs_own_copy(tmp_path: Path) -> None:
    """torch's float16 matmul on CPU is many times slower on a transposed view (a float16 ViT-B ran
    11x slower): such a weight stays as it is; float32 and bfloat16 ones are mapped."""
    weights = {dtype: torch.arange(12, dtype=torch.float32).reshape(3, 4).to(dtype)
               for dtype in (torch.float16, torch.bfloat16, torch.float32)}
    names = {torch.float16: "half_t", torch.bfloat16: "brain_t", torch.float32: "single_t"}
    data, tensors = bytearray(), []
    for dtype, weight in weights.items():
        raw = weight.t().contiguous().view(torch.uint8).numpy().tobytes()
        offset = len(data)
        data.extend(raw + b"\0" * (-len(raw) % 64))
        tensor = TensorProto(name=names[dtype], data_type=TensorProto.FLOAT, dims=[4, 3])
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "w.bin"), ("offset", str(offset)), ("length", str(len(raw)))):
            tensor.external_data.add(key=key, value=value)
        tensors.append(tensor)
    (tmp_path / "w.bin").write_bytes(bytes(data))
    model = helper.make_model(helper.make_graph([], "g", [], [], tensors))
    sources = {names[dtype]: WeightSource(weight, (1, 0)) for dtype, weight in weights.items()}

    map_from_file(sources, model, tmp_path)
    file_bytes = len(data)
    mapped = {dtype for dtype, weight in weights.items() if weight.untyped_storage().nbytes() == file_bytes}
    assert mapped == {torch.bfloat16, torch.float32}
    assert weights[torch.float16].is_contiguous()
    for weight in weights.values():
        torch.testing.assert_close(weight.float(), torch.arange(12, dtype=torch.float32).reshape(3, 4))


@pytest.mark.slow
def test_a_bfloat16_session_reads_its_weights_from_torchs_mapping_of_the_file(small_threshold: Path,
                                                                              model_file) -> None:
    """On CPU a bfloat16 graph keeps its weights bfloat16 and casts them where used, so ONNX Runtime
    takes them from the mapping torch already holds, with no copy of its own, and matches torch."""
    from fixport.core.onnx_io.ort_session import create_session

    loaded = load_model(model_file("mapped_bf16.py", MODEL.replace(
        "Model().eval()", "Model().eval().to(torch.bfloat16)").replace(
        "torch.randn(1, 2, 64))", "torch.randn(1, 2, 64, dtype=torch.bfloat16))")), trust=True)
    result = exporter_for("dynamo").export(loaded, ExportOptions(opset=17))
    assert result.unsupported == [] and result.model.weights_on_disk
    session = create_session(result.model, "cpu").session
    bfloat16_weights = {t.name for t in result.model.proto.graph.initializer
                        if t.data_type == TensorProto.BFLOAT16 and t.data_location == TensorProto.EXTERNAL}
    assert bfloat16_weights and bfloat16_weights <= set(session.fixport_shared_weights)
    ids, x = loaded.example_inputs
    feeds = dict(zip([i.name for i in session.get_inputs()], (ids.numpy(), x.float().numpy())))
    (got,) = session.run(None, feeds)
    with torch.no_grad():
        expected = loaded.module(ids, x).float()
    torch.testing.assert_close(torch.from_numpy(got.astype(np.float32)), expected, rtol=2e-2, atol=2e-2)
    result.model.release()
