"""Models for the optimizer guard's tests, built with onnx.helper and torch (no downloads).

* ``refused_at_basic``: onnxruntime#32416 (open; reproduces on 1.32): a same-dtype Cast feeding
  ``(1 / y) * mid``. ``onnx.checker`` accepts it and it runs with graph optimizations disabled;
  from the basic level up ONNX Runtime refuses to load it (DivMulFusion rewires the Mul's input,
  then CastElimination removes the Cast its new Div still reads).
* ``LayerNormByHand``: a layer norm written out in the export (torch's side is ``layer_norm``
  itself), the pattern ONNX Runtime's LayerNormFusion (level extended and up) fuses. On this
  input far from zero (offset 1000, spread 0.1) the fused kernel's outputs leave torch's tolerance
  (relative error 39x the float32 tolerance; unfused 0.05x), as onnxruntime#4293 reported in kind.
  Measured on ONNX Runtime 1.32's CPU kernels here; other inputs go either way.
"""
from __future__ import annotations

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

LAYER_NORM_WIDTH = 64
LAYER_NORM_OFFSET, LAYER_NORM_SPREAD, LAYER_NORM_SEED = 1000.0, 0.1, 1


def refused_at_basic() -> onnx.ModelProto:
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    nodes = [helper.make_node("Cast", ["x"], ["mid"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Div", ["one", "y"], ["r"], name="reciprocal"),
             helper.make_node("Mul", ["r", "mid"], ["out"], name="scale")]
    graph = helper.make_graph(nodes, "refused_at_basic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4])], [one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def refused_at_basic_inputs() -> dict[str, np.ndarray]:
    return {"x": np.array([1, 2, 3, 4], np.float32), "y": np.array([2, 4, 8, 16], np.float32)}


class LayerNormByHand(torch.nn.Module):
    """(x - mean) / sqrt(var + eps) * weight + bias, the variance over the centred values, as models
    wrote it by hand; torch's reference is ``layer_norm`` itself."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(LAYER_NORM_WIDTH))
        self.bias = torch.nn.Parameter(torch.zeros(LAYER_NORM_WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.onnx.is_in_onnx_export():
            centred = x - x.mean(-1, keepdim=True)
            return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight + self.bias
        return torch.nn.functional.layer_norm(x, (LAYER_NORM_WIDTH,), self.weight, self.bias)


def layer_norm_input() -> torch.Tensor:
    generator = torch.Generator().manual_seed(LAYER_NORM_SEED)
    return LAYER_NORM_OFFSET + torch.randn(2, LAYER_NORM_WIDTH, generator=generator) * LAYER_NORM_SPREAD


def layer_norm_export(path: str) -> onnx.ModelProto:
    """``LayerNormByHand`` exported by the TorchScript exporter at opset 16 (the pattern ORT fuses)."""
    torch.onnx.export(LayerNormByHand(), (layer_norm_input(),), path, input_names=["x"], output_names=["out"],
                      opset_version=16, dynamo=False)
    return onnx.load(path)


# The same layer norm as a model file `compare` opens (build() and the opset that exports the pattern).
LAYER_NORM_MODEL_FILE = f'''
    import torch

    FIXPORT_EXAMPLE = {{"opset": 16}}
    WIDTH = {LAYER_NORM_WIDTH}


    class LayerNormByHand(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(WIDTH))
            self.bias = torch.nn.Parameter(torch.zeros(WIDTH))

        def forward(self, x):
            if torch.onnx.is_in_onnx_export():
                centred = x - x.mean(-1, keepdim=True)
                return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight + self.bias
            return torch.nn.functional.layer_norm(x, (WIDTH,), self.weight, self.bias)


    def build():
        generator = torch.Generator().manual_seed({LAYER_NORM_SEED})
        x = {LAYER_NORM_OFFSET} + torch.randn(2, WIDTH, generator=generator) * {LAYER_NORM_SPREAD}
        return LayerNormByHand().eval(), (x,)
'''
