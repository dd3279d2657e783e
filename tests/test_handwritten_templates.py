"""The hand-written templates the real-model corpus needs, each exported with torch and run in ONNX
Runtime on torch's own OpInfo samples where they exist (else on inputs shaped like the corpus's)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.fixport_export_helpers import Lambda, export, opinfo_inputs, run_ort, spec_for

pytestmark = pytest.mark.slow  # OpInfo sweeps: test_templates.py keeps the built-in templates in the fast tier

OPSET = 17


def _assert_close(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], specs: list, *,
                  atol: float = 1e-4, rtol: float = 1e-4, opset: int = OPSET) -> None:
    proto = export(model, inputs, specs, opset)
    with torch.no_grad():
        expected = model(*inputs)
    (got,) = run_ort(proto, inputs)[:1]
    np.testing.assert_allclose(got, expected.numpy(), atol=atol, rtol=rtol)


# -- decompose ------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(6))
def test_rms_norm_matches_torch_on_opinfo_samples(index: int) -> None:
    samples = opinfo_inputs("nn.functional.rms_norm")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    model = Lambda(lambda t: F.rms_norm(t, *args, **kwargs))
    _assert_close(model, (x,), [spec_for("decompose.rms_norm", "aten::rms_norm")])


@pytest.mark.parametrize("index", range(8))
def test_diff_matches_torch_on_opinfo_samples(index: int) -> None:
    samples = opinfo_inputs("diff")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    model = Lambda(lambda t: torch.diff(t, *args, **kwargs))
    _assert_close(model, (x,), [spec_for("decompose.diff", "aten::diff")])


def test_diff_of_booleans_is_xor_and_cumsum_of_booleans_counts() -> None:
    """transformers' packed-sequence check: (diff(positions) != 1).cumsum(-1), on booleans both."""
    model = Lambda(lambda t: torch.diff(t > 0, dim=-1, prepend=torch.zeros(1, 1, dtype=torch.bool)).cumsum(-1))
    specs = [spec_for("decompose.diff", "aten::diff"), spec_for("decompose.cumsum_bool", "aten::cumsum")]
    proto = export(model, (torch.randn(1, 9),), specs, OPSET)
    x = torch.randn(1, 9)
    np.testing.assert_array_equal(run_ort(proto, (x,))[0], model(x).numpy())


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("index", range(5))
@pytest.mark.parametrize("opset", [9, 13, 18])
def test_amax_amin_propagate_nan_on_opinfo_samples(op: str, index: int, opset: int) -> None:
    """ONNX Runtime's ReduceMax/ReduceMin skip NaN; the template puts it back where torch keeps it."""
    samples = opinfo_inputs(op)
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    if x.numel():
        x = x.clone()
        x.view(-1)[:: max(x.numel() // 3, 1)] = float("nan")  # a few slices with a gap
    model = Lambda(lambda t: getattr(torch, op)(t, *args, **kwargs))
    fix = spec_for("onnx_function.amax_nan_propagating", f"aten::{op}", kind=f"aten::{op}")  # one file for both ops
    proto = export(model, (x,), [fix], opset)
    np.testing.assert_array_equal(run_ort(proto, (x,))[0], model(x).numpy())


@pytest.mark.parametrize("index", range(4))
def test_cumsum_template_matches_torch_on_opinfo_samples(index: int) -> None:
    samples = opinfo_inputs("cumsum")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    model = Lambda(lambda t: torch.cumsum(t, *args, **kwargs))
    _assert_close(model, (x,), [spec_for("decompose.cumsum_bool", "aten::cumsum")])


ADAPTIVE_AVG_POOL_TEMPLATES = ["decompose.adaptive_avg_pool2d_matmul", "decompose.adaptive_avg_pool2d_cumsum"]


@pytest.mark.parametrize("template", ADAPTIVE_AVG_POOL_TEMPLATES)
@pytest.mark.parametrize("index", range(6))
def test_adaptive_avg_pool2d_on_opinfo_samples(index: int, template: str) -> None:
    samples = opinfo_inputs("nn.functional.adaptive_avg_pool2d")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    model = Lambda(lambda t: F.adaptive_avg_pool2d(t, *args, **kwargs))
    _assert_close(model, (x,), [spec_for(template, "aten::adaptive_avg_pool2d")])


@pytest.mark.parametrize("template", ADAPTIVE_AVG_POOL_TEMPLATES)
def test_adaptive_avg_pool2d_output_sizes_that_do_not_divide(template: str) -> None:
    model = Lambda(lambda t: F.adaptive_avg_pool2d(t, (7, 5)))
    _assert_close(model, (torch.randn(2, 3, 10, 12),), [spec_for(template, "aten::adaptive_avg_pool2d")])


@pytest.mark.parametrize("size", [(12, 9), (5, 31), (40, 40)])
def test_antialiased_bilinear_resize_down_and_up(size: tuple[int, int]) -> None:
    model = Lambda(lambda t: F.interpolate(t, size=size, mode="bilinear", antialias=True))
    _assert_close(model, (torch.rand(1, 3, 24, 30),),
                  [spec_for("decompose.upsample_bilinear2d_aa_matmul", "aten::_upsample_bilinear2d_aa")])


# -- moe ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(6))
def test_histc_matches_torch_on_opinfo_samples(index: int) -> None:
    samples = opinfo_inputs("histc")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    model = Lambda(lambda t: torch.histc(t, *args, **kwargs))
    _assert_close(model, (x,), [spec_for("onnx_function.histc", "aten::histc")], atol=0, rtol=0)


def test_histc_counts_expert_ids_like_a_moe_router() -> None:
    model = Lambda(lambda ids: torch.histc(ids.float(), bins=4, min=0, max=3))
    ids = torch.tensor([3, 0, 1, 3, 3, 2, 0, 3])
    _assert_close(model, (ids,), [spec_for("onnx_function.histc", "aten::histc")], atol=0, rtol=0)


@pytest.mark.parametrize("opset", [13, OPSET])
def test_grouped_mm_ragged_rows_per_expert(opset: int) -> None:
    """Rows sorted by expert, offs the cumulative row ends: the call transformers' MoE layers make."""
    weights = torch.randn(4, 8, 8)  # torch's kernel wants 16-byte strides
    model = Lambda(lambda rows, offs: torch._grouped_mm(rows, weights, offs=offs))
    inputs = (torch.randn(10, 8), torch.tensor([3, 3, 7, 10], dtype=torch.int32))  # expert 1 gets no rows
    _assert_close(model, inputs, [spec_for("onnx_function.grouped_mm", "aten::_grouped_mm")], opset=opset)


# -- fft (DFT, opset 17) -------------------------------------------------------------------------
_FFT_TEMPLATES = {"fft.fft": ("fft.fft_c2c", "aten::fft_fft"), "fft.fftn": ("fft.fft_c2c", "aten::fft_fftn"),
                  "fft.ifft": ("fft.fft_c2c", "aten::fft_ifft"), "fft.rfft": ("fft.fft_rfftn", "aten::fft_rfft"),
                  "fft.rfftn": ("fft.fft_rfftn", "aten::fft_rfftn"), "fft.irfft": ("fft.fft_irfftn", "aten::fft_irfft"),
                  "fft.irfftn": ("fft.fft_irfftn", "aten::fft_irfftn")}
_FFT_CASES = [(name, index) for name in _FFT_TEMPLATES for index in range(4)]


@pytest.mark.parametrize(("name", "index"), _FFT_CASES, ids=[f"{n}-{i}" for n, i in _FFT_CASES])
def test_fft_templates_match_torch_on_opinfo_samples(name: str, index: int) -> None:
    samples = opinfo_inputs(name)
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, args, kwargs = samples[index]
    function = getattr(torch.fft, name.split(".")[1])
    template_id, kind = _FFT_TEMPLATES[name]
    specs = [spec_for(template_id, kind)]
    if name.startswith("fft.irfft"):
        model = Lambda(lambda t: function(t, *args, **kwargs))
    else:  # complex output: compared in view_as_real's (..., 2) layout, the one the templates write
        model = Lambda(lambda t: torch.view_as_real(function(t, *args, **kwargs).resolve_conj()))
        specs += [spec_for("complex.view_as_complex", "aten::view_as_real"),
                  spec_for("complex.conj", "aten::resolve_conj")]
    _assert_close(model, (x,), specs, atol=1e-4, rtol=1e-4)


def test_fft_sizes_pad_and_crop_through_dft_length() -> None:
    model = Lambda(lambda t: torch.fft.irfftn(torch.fft.rfftn(t, s=(12, 10)) * 2, s=(12, 10)))
    specs = [spec_for("fft.fft_rfftn", "aten::fft_rfftn"), spec_for("fft.fft_irfftn", "aten::fft_irfftn")]
    _assert_close(model, (torch.randn(2, 9, 8),), specs)


# -- complex numbers in real arithmetic ----------------------------------------------------------
_COMPLEX_SPECS = [("complex.view_as_complex", "aten::view_as_complex"),
                  ("complex.view_as_complex", "aten::view_as_real"), ("complex.polar", "aten::polar"),
                  ("complex.mul", "aten::mul"), ("complex.conj", "aten::_conj"), ("complex.real", "aten::real"),
                  ("complex.real", "aten::imag"), ("onnx_function.complex_unsqueeze", "aten::unsqueeze"),
                  ("complex.layout_ops", "aten::slice"), ("complex.layout_ops", "aten::select"),
                  ("complex.layout_ops", "aten::transpose")]


def _complex_specs() -> list:
    return [spec_for(template_id, kind) for template_id, kind in _COMPLEX_SPECS]


@pytest.mark.parametrize("opset", [13, OPSET])
def test_llama4_style_rotary_embedding(opset: int) -> None:
    """view_as_complex(q) * polar(1, angles)[:, None, :] -> view_as_real, as Llama 4 rotates q and k."""
    def rotate(q: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        angles = positions[:, None] * torch.tensor([1.0, 0.1, 0.01, 0.001])[None, :]
        freqs = torch.polar(torch.ones_like(angles), angles)[:, None, :]
        rotated = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2)) * freqs
        return torch.view_as_real(rotated).flatten(-2)

    _assert_close(Lambda(rotate), (torch.randn(6, 2, 8), torch.arange(6).float()), _complex_specs(), opset=opset)


def test_complex_product_conjugate_real_and_imaginary_parts() -> None:
    def spectrum_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(a) * torch.conj(torch.view_as_complex(b)) * 0.5
        z = z.transpose(0, -1)[-1] * torch.arange(3.0)  # shape ops on complex tensors, a real factor
        return torch.stack([z.real, z.imag], dim=-1)

    _assert_close(Lambda(spectrum_product), (torch.randn(3, 4, 2), torch.randn(3, 4, 2)), _complex_specs())


@pytest.mark.parametrize("index", range(3))
def test_polar_matches_torch_on_opinfo_samples(index: int) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    info = next(op for op in op_db if op.name == "polar")
    samples = list(info.sample_inputs("cpu", torch.float32))
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    sample = samples[index]
    model = Lambda(lambda magnitude, angle: torch.view_as_real(torch.polar(magnitude, angle)))
    _assert_close(model, (sample.input, sample.args[0]), _complex_specs())


# -- linalg ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(6))
def test_linalg_inv_matches_torch_on_opinfo_samples(index: int) -> None:
    samples = opinfo_inputs("linalg.inv")
    if index >= len(samples):
        pytest.skip("fewer OpInfo samples")
    x, _, _ = samples[index]
    _assert_close(Lambda(torch.linalg.inv), (x,), [spec_for("linalg.linalg_inv_gauss_jordan", "aten::linalg_inv")],
                  atol=1e-3, rtol=1e-3)


def test_linalg_inv_needs_a_pivot_swap() -> None:
    """A zero on the diagonal: without row swaps Gauss-Jordan would divide by it."""
    matrix = torch.tensor([[[0.0, 2.0, 1.0], [1.0, 0.0, 0.0], [3.0, 1.0, 4.0]]])
    _assert_close(Lambda(torch.linalg.inv), (matrix,),
                  [spec_for("linalg.linalg_inv_gauss_jordan", "aten::linalg_inv")])


# -- quantized, torchvision ------------------------------------------------------------------------
def test_dynamic_quantized_linear_is_the_dequantized_float_linear() -> None:
    torch.manual_seed(0)
    float_model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)).eval()
    quantized = torch.ao.quantization.quantize_dynamic(float_model, {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.randn(3, 16)
    proto = export(quantized, (x,), [spec_for("quantized.linear_dynamic_float", "quantized::linear_dynamic")], OPSET)
    (got,) = run_ort(proto, (x,))
    layers: list[Any] = [quantized[0], quantized[2]]
    expected = x
    with torch.no_grad():
        for index, layer in enumerate(layers):
            weight, bias = layer._packed_params._weight_bias()
            expected = F.linear(expected, weight.dequantize(), bias)
            expected = expected.relu() if index == 0 else expected
        from_torch = quantized(x)
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)  # exactly the dequantized float model
    np.testing.assert_allclose(got, from_torch.numpy(), atol=5e-2)  # and close to torch's int8 kernel


def test_nms_at_opset_10_keeps_torchvisions_boxes_in_order() -> None:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    corners = torch.rand(30, 2) * 40
    boxes, scores = torch.cat([corners, corners + 8 + torch.rand(30, 2) * 10], dim=1), torch.rand(30)
    model = Lambda(lambda b, s: torchvision.ops.nms(b, s, 0.4))
    proto = export(model, (boxes, scores), [spec_for("torchvision.nms_opset10", "torchvision::nms")], 10)
    np.testing.assert_array_equal(run_ort(proto, (boxes, scores))[0], model(boxes, scores).numpy())


@pytest.mark.parametrize("opset", [13, 16])
def test_roi_align_aligned_before_and_after_opset_16(opset: int) -> None:
    torchvision = pytest.importorskip("torchvision")
    features = torch.randn(2, 4, 16, 16)
    boxes = torch.tensor([[0, 1.0, 2.0, 30.0, 28.0], [1, 0.0, 0.0, 31.0, 31.0], [1, 8.5, 3.0, 20.0, 12.5]])
    model = Lambda(lambda f, b: torchvision.ops.roi_align(f, b, (3, 3), spatial_scale=0.5, sampling_ratio=2,
                                                          aligned=True))
    _assert_close(model, (features, boxes), [spec_for("torchvision.roi_align_aligned", "torchvision::roi_align")],
                  opset=opset)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_then_grid_sample_like_kornia_rotate(align_corners: bool) -> None:
    def rotate(image: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        grid = F.affine_grid(theta, [2, 3, 9, 13], align_corners=align_corners)
        return F.grid_sample(image, grid, align_corners=align_corners)

    angle = torch.tensor([0.3, -1.1])
    theta = torch.stack([torch.stack([angle.cos(), -angle.sin(), 0.1 * angle], 1),
                         torch.stack([angle.sin(), angle.cos(), -0.2 * angle], 1)], 1)
    _assert_close(Lambda(rotate), (torch.rand(2, 3, 12, 10), theta),
                  [spec_for("decompose.affine_grid_generator_matmul", "aten::affine_grid_generator")])
