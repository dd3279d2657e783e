"""Static-shape materialisation: an op linear in its inputs becomes one MatMul with torch's matrix.

The linearity check on real torch ops, and `fix --auto` choosing the family for ops that only it
fixes at opset 17 (real exports, real ONNX Runtime sessions, compared with torch).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.loaders.loading import load_model
from fixport.core.records.requests import AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.symbolics.library import parse_template_source
from fixport.symbolics.synthesis.materialise import (
    MATERIALISED_FAMILY,
    MaterialiseError,
    find_linear_map,
    materialised_template,
)

MODEL = '''
import torch

FIXPORT_EXAMPLE = {{"opset": 17}}


class OneOp(torch.nn.Module):
    def forward(self, x):
        return {expression}


def build():
    torch.manual_seed(0)
    return OneOp().eval(), (torch.randn({shape}),)
'''

# Ops the exporter refuses at opset 17 that nothing but the matrix fixes (no symbolic, no torch_lib
# function and no decomposition that converts).
# (diagonal_scatter was one; Fixport's own decomposition of it now fixes it at every shape, first)
ONLY_MATERIALISATION_FIXES = {
    "aten::adaptive_avg_pool3d": ("torch.nn.functional.adaptive_avg_pool3d(x, (3, 2, 5))", "1, 2, 5, 4, 7"),
}


def test_adaptive_pooling_with_sizes_that_do_not_divide_is_a_small_matrix() -> None:
    x = torch.randn(2, 3, 7, 9)
    linear = find_linear_map(lambda xs: torch.nn.functional.adaptive_avg_pool2d(xs[0], (3, 4)), [x])
    assert linear.batch_dims == 2  # batch and channels stay out of the matrix
    assert tuple(linear.matrix.shape) == (7 * 9, 3 * 4) and linear.bias is None
    expected = torch.nn.functional.adaptive_avg_pool2d(x, (3, 4)).double()
    assert torch.allclose(linear.apply([x]), expected, atol=1e-6)


def test_an_affine_op_keeps_its_value_at_zero_as_the_bias() -> None:
    x = torch.randn(4, 6)
    linear = find_linear_map(lambda xs: torch.cumsum(xs[0], 1) + 0.5, [x])
    assert linear.bias is not None and torch.allclose(linear.bias, torch.full((6,), 0.5, dtype=torch.float64))


@pytest.mark.parametrize("function", [
    lambda xs: torch.relu(xs[0]),  # piecewise linear: random inputs show it
    lambda xs: xs[0] * xs[0],
    lambda xs: torch.clamp(xs[0], -100.0, 100.0),  # linear near zero only: large inputs show it
])
def test_ops_that_are_not_linear_are_refused(function) -> None:
    with pytest.raises(MaterialiseError):
        find_linear_map(function, [torch.randn(3, 4)])


def test_integer_inputs_and_huge_matrices_are_refused() -> None:
    with pytest.raises(MaterialiseError, match="floating point"):
        find_linear_map(lambda xs: xs[0] * 2, [torch.ones(3, dtype=torch.int64)])
    with pytest.raises(MaterialiseError, match="exceed"):
        find_linear_map(lambda xs: xs[0].flip(0, 1), [torch.randn(300, 300)])


def test_the_template_says_it_is_shape_specialised_and_parses() -> None:
    source = materialised_template("aten::adaptive_avg_pool3d", "Float(1, 2, 5, 4, 7)")
    info = parse_template_source(source, "<generated>")
    assert info.family == MATERIALISED_FAMILY and info.runs_in_onnxruntime
    assert "Shape-specialised" in source and "Float(1, 2, 5, 4, 7)" in source


@pytest.mark.parametrize("kind", list(ONLY_MATERIALISATION_FIXES))
def test_fix_auto_materialises_linear_ops_at_opset_17(worker, kind: str, tmp_path: Path) -> None:
    expression, shape = ONLY_MATERIALISATION_FIXES[kind]
    model = tmp_path / "one_op.py"
    model.write_text(MODEL.format(expression=expression, shape=shape), encoding="utf-8")
    onnx_path = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), output=str(onnx_path)))
    assert [p.kind for p in result.before.unsupported] == [kind]
    assert result.after.unsupported == [], result.rejected
    assert [(c.kind, c.family) for c in result.choices] == [(kind, MATERIALISED_FAMILY)], result.rejected
    assert "MatMul" in {node.kind.split("::")[1] for node in result.after.onnx_graph.nodes}
    loaded = load_model(model)
    with torch.no_grad():
        expected = loaded.module(*loaded.example_inputs).numpy()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: loaded.example_inputs[0].numpy()})
    assert actual.shape == expected.shape
    assert float(np.max(np.abs(actual - expected))) <= 1e-5


def test_the_template_dock_offers_the_matrix_after_the_decomposition() -> None:
    from fixport.core.fixing.generated_fixes import generated_offers
    from fixport.core.records.requests import SynthesizeRequest

    offers = generated_offers(SynthesizeRequest("aten::adaptive_avg_pool2d", 17))
    ids = [offer.template_id for offer in offers]
    assert ids[-1] == "synthesized.materialised.adaptive_avg_pool2d"
    assert "synthesized.decomposition.adaptive_avg_pool2d" in ids
    assert "emit_materialised" in offers[-1].template.source  # readable and editable like any template
