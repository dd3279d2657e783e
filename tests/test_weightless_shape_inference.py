"""torch's shape inference over a big TorchScript export gets the small parameters only (it read and
copied every weight in one call holding the GIL: a 1.5 B bfloat16 model's peak); the export is the
one inference with every weight makes, a Reshape's folded target included."""
from __future__ import annotations

import onnx
import pytest

from fixport.core.exporters.torchscript.weightless_shape_inference import shape_inference_without_weights

torch = pytest.importorskip("torch")

SIZES_FROM_A_BUFFER = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)
        def forward(self, x):  # the Reshape's target becomes a small folded initializer
            y = self.down(torch.relu(self.up(x)))
            return y.reshape(x.shape[0], 4, 16) + self.up.weight.sum()

    def build():
        torch.manual_seed(0)
        return Model().eval(), (torch.randn(2, 64),)
"""


def _structure(model: onnx.ModelProto) -> tuple:
    graph = model.graph
    return ([(n.op_type, list(n.input), list(n.output)) for n in graph.node],
            [(v.name, str(v.type)) for v in [*graph.input, *graph.output, *graph.value_info]],
            sorted((t.name, list(t.dims), t.data_type) for t in graph.initializer))


def test_a_big_export_infers_shapes_without_the_weights_and_is_the_same_export(monkeypatch, small_threshold,
                                                                               model_file) -> None:
    """The TorchScript export of a model whose weights go to a file (the 1 GB threshold lowered to 1 byte)."""
    import fixport.core.exporters.torchscript.exporter as torchscript_exporter
    from fixport.core.exporters.choice import exporter_for
    from fixport.core.loaders.loading import load_model
    from fixport.core.project.export_options import ExportOptions

    loaded = load_model(model_file("sizes.py", SIZES_FROM_A_BUFFER), trust=True)
    in_memory = exporter_for("torchscript").export(loaded, ExportOptions(opset=17))
    monkeypatch.setattr(torchscript_exporter, "IN_MEMORY_EXPORT_LIMIT_BYTES", 1)
    given: list[set[str]] = []
    torchs_inference = torch._C._jit_pass_onnx_graph_shape_type_inference

    def watched(graph, params, opset):  # torch's own inference, run as it is; what it was handed, noted
        given.append(set(params))
        return torchs_inference(graph, params, opset)

    monkeypatch.setattr(torch._C, "_jit_pass_onnx_graph_shape_type_inference", watched)
    on_disk = exporter_for("torchscript").export(loaded, ExportOptions(opset=17))
    assert in_memory.unsupported == [] and on_disk.unsupported == [] and on_disk.model.weights_on_disk
    assert given and all("up.bias" in names for names in given), given  # small ones still reach it
    assert not any(name in names for names in given for name in ("up.weight", "down.weight")), given
    assert _structure(on_disk.model.proto) == _structure(in_memory.model.proto)
    assert on_disk.runtime_outputs is not None and in_memory.runtime_outputs is not None
    for found, expected in zip(on_disk.runtime_outputs, in_memory.runtime_outputs):
        assert (found == expected).all()


def test_torchs_inference_is_its_own_again_afterwards() -> None:
    original = torch._C._jit_pass_onnx_graph_shape_type_inference
    with shape_inference_without_weights():
        assert torch._C._jit_pass_onnx_graph_shape_type_inference is not original
    assert torch._C._jit_pass_onnx_graph_shape_type_inference is original
