"""ONNX Runtime runs an export on the torch model's own weights: no second copy (issue 20, memory)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper

from fixport.core.exporters.base import ExportOptions
from fixport.core.exporters.choice import exporter_for
from fixport.core.exporters.shared_weights import share_torch_weights
from fixport.core.loaders.loading import load_model
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.ort_session import create_session

MODEL = """
    import torch

    def build():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
        return model, (torch.randn(2, 64),)
"""


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_session_reads_the_parameters_where_torch_holds_them(model_file, exporter) -> None:
    loaded = load_model(model_file("mlp.py", MODEL), trust=True)
    result = exporter_for(exporter).export(loaded, ExportOptions(opset=17), run_check=False)
    parameters = dict(loaded.module.named_parameters())
    assert set(result.model.shared) == set(parameters)
    session = create_session(result.model, "cpu").session
    x = loaded.example_inputs[0]
    feeds = {session.get_inputs()[0].name: x.numpy()}
    (before,) = session.run(None, feeds)
    np.testing.assert_allclose(before, loaded.module(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        parameters["2.bias"].add_(1.0)  # in place: the session sees it only if it shares the memory
    (after,) = session.run(None, feeds)
    np.testing.assert_allclose(after, before + 1.0, rtol=1e-5, atol=1e-6)


def test_an_initializer_named_after_a_parameter_but_holding_other_values_is_not_shared() -> None:
    module = torch.nn.Linear(4, 4)
    weight = module.weight.detach().numpy()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "weight"], ["y"]), helper.make_node("Add", ["y", "bias"], ["z"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 4])],
        initializer=[numpy_helper.from_array(weight.T.copy(), "weight"),  # transposed: same name, dtype and shape
                     numpy_helper.from_array(module.bias.detach().numpy(), "bias")])
    model = OnnxModel(helper.make_model(graph))
    share_torch_weights(model, module)
    assert set(model.shared) == {"bias"}
