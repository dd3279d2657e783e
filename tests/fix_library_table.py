"""The one table of Fixport's hand-written fixes: for each template, the op it is applied to, a
small model that uses the op, the tolerance against torch and, per exporter, why it is expected to
fail there. tests/test_fix_library.py runs every row under both exporters (onnxscript's torch_lib
keeps its op tests in one such table, ops_test_data.py).

A fix written for one exporter only (``torchscript_only`` in its ``@fix``, or a dynamo template)
needs no reason here: its metadata says why, and the test checks the other library leaves it out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

TORCHSCRIPT, DYNAMO = "torchscript", "dynamo"
EXPORTERS = (TORCHSCRIPT, DYNAMO)
DYNAMO_OPSET = 18  # the opset the dynamo exporter translates at (torch_lib's)
ATOL = 1e-4  # float32, for a fix that declares no tolerance of its own
CUSTOM_RUNTIME = "writes a custom-domain node: ONNX Runtime cannot run it without a plugin"


@dataclass(frozen=True)
class FixCase:
    """One hand-written fix, applied to ``op`` in a model that computes ``forward`` on ``inputs``."""

    template_id: str
    op: str  # the op overload, as the dynamo exporter names it (TorchScript: the name before the '.');
    # prim::PythonOp[Name] for an autograd.Function
    forward: str = ""  # the model's forward: an expression over x, y, z
    inputs: str = ""  # build()'s example inputs, a tuple expression
    example: str = ""  # instead of forward/inputs: a model of fixport/examples/ by file name
    module: str = ""  # instead of forward: an expression building the model
    opset: int = 17  # the TorchScript export's opset
    atol: float | None = None  # the largest |ONNX Runtime - torch|; None: the fix's own tolerance, else ATOL
    params: dict = field(default_factory=dict)
    with_fixes: tuple[tuple[str, str], ...] = ()  # (template id, op) the model needs fixed too
    xfail: dict = field(default_factory=dict)  # exporter -> why the fix is expected to fail there
    opinfo: str = ""  # the OpInfo entry tests/test_handwritten_templates.py sweeps it on, if any

    def ops(self) -> list[tuple[str, str]]:
        return [(self.template_id, self.op), *self.with_fixes]


# TorchScript carries complex tensors in the (real, imag) layout these fixes build together.
COMPLEX_FIXES = (("complex.view_as_complex", "aten::view_as_complex.default"),
                 ("complex.view_as_complex", "aten::view_as_real.default"), ("complex.polar", "aten::polar.default"),
                 ("complex.mul", "aten::mul.Tensor"), ("complex.conj", "aten::_conj.default"),
                 ("complex.real", "aten::real.default"), ("complex.real", "aten::imag.default"),
                 ("onnx_function.complex_unsqueeze", "aten::unsqueeze.default"),
                 ("complex.layout_ops", "aten::slice.Tensor"), ("complex.layout_ops", "aten::select.int"),
                 ("complex.layout_ops", "aten::transpose.int"))


def _without(template_id: str, op: str) -> tuple[tuple[str, str], ...]:
    return tuple(pair for pair in COMPLEX_FIXES if pair != (template_id, op))


ROTARY = ("torch.view_as_real(torch.view_as_complex(x) * torch.polar(torch.ones_like(y), y))",
          "(torch.randn(3, 4, 2), torch.randn(3, 4))")
AUTOGRAD_FIXES = (("autograd.my_add", "prim::PythonOp[MyAddPyOp]"), ("autograd.my_clip", "prim::PythonOp[MyClip]"),
                  ("autograd.my_relu", "prim::PythonOp[MyRelu]"))
FLOAT = "(torch.randn(3, 4),)"

CASES = [
    # -- aten: elementwise -------------------------------------------------------------------------
    FixCase("standard.acosh", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)", opset=9),
    FixCase("standard.asinh", "aten::asinh.default", "torch.asinh(x)", FLOAT, opset=9),
    FixCase("standard.atanh", "aten::atanh.default", "torch.atanh(x)", "(torch.rand(3, 4) * 1.8 - 0.9,)", opset=9),
    FixCase("decompose.acosh_log", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)", opset=8),
    FixCase("decompose.asinh_log", "aten::asinh.default", "torch.asinh(x)", FLOAT, opset=8),
    FixCase("decompose.atanh_log", "aten::atanh.default", "torch.atanh(x)", "(torch.rand(3, 4) * 1.8 - 0.9,)",
            opset=8),
    FixCase("decompose.selu", "aten::selu.default", "torch.selu(x)", FLOAT, opset=9),
    FixCase("onnxscript.selu_function", "aten::selu.default", "torch.selu(x)", FLOAT, opset=15),
    FixCase("decompose.threshold_where", "aten::threshold.default", "F.threshold(x, 0.5, -1.0)", FLOAT, opset=9),
    FixCase("onnx_function.pow_as_mul", "aten::pow.Tensor_Scalar", "x ** 3",
            "(torch.randint(-5, 5, (3, 4), dtype=torch.int16),)", opset=15,
            xfail={TORCHSCRIPT: "the exporter hands the exponent over as a graph value, not the number the "
                                "function counts its Muls by"}),
    # -- aten: reductions, scans, selections -------------------------------------------------------
    FixCase("decompose.rms_norm", "aten::rms_norm.default", "F.rms_norm(x, (4,), eps=1e-5)", FLOAT, opset=13,
            opinfo="nn.functional.rms_norm"),
    FixCase("decompose.diff", "aten::diff.default", "torch.diff(x, dim=1)", FLOAT, opset=11, opinfo="diff"),
    FixCase("decompose.cumsum_bool", "aten::cumsum.default", "torch.cumsum(x > 0, dim=1)", FLOAT, opset=11,
            opinfo="cumsum"),
    FixCase("onnx_function.amax_nan_propagating", "aten::amax.default", "torch.amax(x, dim=1)",
            "(torch.tensor([[1.0, float('nan'), 2.0], [3.0, 4.0, 5.0]]),)", opset=13, opinfo="amax"),
    FixCase("onnx_function.median_dim_topk", "aten::median.dim", "x.median(dim=1)", "(torch.randn(3, 7, 5),)"),
    FixCase("onnx_function.histc", "aten::histc.default", "torch.histc(x, bins=5, min=-1.0, max=1.0)", FLOAT,
            opset=13, opinfo="histc"),
    FixCase("onnx_function.masked_select_compress", "aten::masked_select.default", "torch.masked_select(x * 2, y)",
            "(torch.rand(3, 4), torch.tensor([True, False, True, True]))", opset=11),
    FixCase("onnx_function.grouped_mm", "aten::_grouped_mm.default", "torch._grouped_mm(x, y, offs=z)",
            "(torch.randn(6, 8), torch.randn(3, 8, 4), torch.tensor([2, 4, 6], dtype=torch.int32))", opset=13,
            atol=1e-3, xfail={DYNAMO: "torch.export runs _grouped_mm, which takes bfloat16 only on CPU (the "
                                      "Mixtral MoE test in test_shared_templates.py covers dynamo)"}),
    FixCase("linalg.linalg_inv_gauss_jordan", "aten::linalg_inv.default", "torch.linalg.inv(x)",
            "(torch.randn(2, 3, 3) + 3 * torch.eye(3),)", opset=13, opinfo="linalg.inv"),
    # -- aten: shapes, pooling, resizing, attention -----------------------------------------------
    FixCase("decompose.unflatten_reshape", "aten::unflatten.int", "x.unflatten(1, (2, 6))",
            "(torch.randn(3, 12),)", opset=11),
    FixCase("decompose.scaled_dot_product_attention", "aten::scaled_dot_product_attention.default",
            "F.scaled_dot_product_attention(x, y, z)",
            "(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))", opset=13),
    FixCase("decompose.adaptive_avg_pool2d_matmul", "aten::adaptive_avg_pool2d.default",
            "F.adaptive_avg_pool2d(x, (3, 2))", "(torch.randn(1, 2, 7, 5),)", opset=11,
            opinfo="nn.functional.adaptive_avg_pool2d"),
    FixCase("decompose.adaptive_avg_pool2d_cumsum", "aten::adaptive_avg_pool2d.default",
            "F.adaptive_avg_pool2d(x, (3, 2))", "(torch.randn(1, 2, 7, 5),)", opset=11,
            opinfo="nn.functional.adaptive_avg_pool2d"),
    FixCase("decompose.affine_grid_generator_matmul", "aten::affine_grid_generator.default",
            "F.affine_grid(x, [2, 3, 5, 6], align_corners=False)", "(torch.randn(2, 2, 3),)", opset=13),
    FixCase("decompose.upsample_bicubic2d_resize", "aten::upsample_bicubic2d.vec",
            "F.interpolate(x, size=(7, 9), mode='bicubic', align_corners=False)", "(torch.randn(1, 2, 4, 5),)",
            opset=11),
    FixCase("decompose.upsample_bilinear2d_aa_matmul", "aten::_upsample_bilinear2d_aa.vec",
            "F.interpolate(x, size=(5, 6), mode='bilinear', antialias=True)", "(torch.randn(1, 2, 9, 11),)",
            opset=11),
    # -- aten: complex numbers and FFTs ------------------------------------------------------------
    FixCase("complex.view_as_complex", "aten::view_as_complex.default", *ROTARY, opset=13,
            with_fixes=_without("complex.view_as_complex", "aten::view_as_complex.default")),
    FixCase("complex.polar", "aten::polar.default", *ROTARY, opset=13,
            with_fixes=_without("complex.polar", "aten::polar.default")),
    FixCase("complex.mul", "aten::mul.Tensor", *ROTARY, opset=13,
            with_fixes=_without("complex.mul", "aten::mul.Tensor")),
    FixCase("complex.conj", "aten::_conj.default", "torch.view_as_real(torch.conj(torch.view_as_complex(x)) * 2)",
            "(torch.randn(3, 4, 2),)", opset=13, with_fixes=_without("complex.conj", "aten::_conj.default")),
    FixCase("complex.real", "aten::real.default",
            "torch.stack([torch.view_as_complex(x).real, torch.view_as_complex(x).imag], dim=-1)",
            "(torch.randn(3, 4, 2),)", opset=13, with_fixes=_without("complex.real", "aten::real.default")),
    FixCase("complex.layout_ops", "aten::transpose.int",
            "torch.view_as_real(torch.view_as_complex(x).transpose(0, 1)[-1] * 2)", "(torch.randn(3, 4, 2),)",
            opset=13, with_fixes=_without("complex.layout_ops", "aten::transpose.int")),
    FixCase("onnx_function.complex_unsqueeze", "aten::unsqueeze.default",
            "torch.view_as_real(torch.view_as_complex(x).unsqueeze(0) * torch.polar(torch.ones_like(y), y))",
            "(torch.randn(3, 4, 2), torch.randn(2, 3, 4))", opset=13,
            with_fixes=_without("onnx_function.complex_unsqueeze", "aten::unsqueeze.default")),
    FixCase("onnx_function.complex_conj_physical", "aten::_conj_physical.default",
            "torch.view_as_real(torch.conj_physical(torch.view_as_complex(x)))", "(torch.randn(3, 4, 2),)",
            opset=17,
            with_fixes=_without("onnx_function.complex_conj_physical", "aten::_conj_physical.default"),
            xfail={TORCHSCRIPT: "TorchScript traces conj_physical as aten::conj_physical, not _conj_physical"}),
    FixCase("onnx_function.complex_constant_pad_nd", "aten::constant_pad_nd.default",
            "torch.view_as_real(torch.constant_pad_nd(torch.view_as_complex(x), (1, 2)))", "(torch.randn(3, 4, 2),)",
            opset=17, with_fixes=COMPLEX_FIXES),
    FixCase("fft.fft_c2c", "aten::fft_fft.default", "torch.view_as_real(torch.fft.fft(x))", FLOAT, opset=17,
            with_fixes=COMPLEX_FIXES, opinfo="fft.fft"),
    FixCase("fft.fft_rfftn", "aten::fft_rfft.default", "torch.view_as_real(torch.fft.rfft(x))", FLOAT, opset=17,
            with_fixes=COMPLEX_FIXES, opinfo="fft.rfft"),
    FixCase("fft.fft_irfftn", "aten::fft_irfft.default", "torch.fft.irfft(torch.fft.rfft(x))",
            "(torch.randn(3, 8),)", opset=17, with_fixes=(("fft.fft_rfftn", "aten::fft_rfft.default"),),
            opinfo="fft.irfft"),
    # -- other namespaces ------------------------------------------------------------------------
    FixCase("torchvision.nms_opset10", "torchvision::nms.default", "torchvision.ops.nms(x, y, 0.5)",
            "(torch.tensor([[0., 0., 2., 2.], [0., 0., 2.1, 2.], [3., 3., 4., 4.]]), torch.tensor([0.9, 0.8, 0.7]))",
            opset=10),
    FixCase("torchvision.roi_align_aligned", "torchvision::roi_align.default",
            "torchvision.ops.roi_align(x, y, (2, 2), 1.0, 2, aligned=True)",
            "(torch.randn(1, 2, 8, 8), torch.tensor([[0., 1., 1., 5., 6.]]))", opset=13),
    FixCase("torchvision.deform_conv2d_onnx", "torchvision::deform_conv2d.default",
            "torchvision.ops.deform_conv2d(x, y, z)",
            "(torch.randn(1, 2, 5, 5), torch.zeros(1, 18, 3, 3), torch.randn(4, 2, 3, 3))", opset=19),
    FixCase("torchvision.deform_conv2d_custom", "torchvision::deform_conv2d.default",
            "torchvision.ops.deform_conv2d(x, y, z)",
            "(torch.randn(1, 2, 5, 5), torch.zeros(1, 18, 3, 3), torch.randn(4, 2, 3, 3))", opset=13,
            xfail={TORCHSCRIPT: CUSTOM_RUNTIME}),
    FixCase("quantized.linear_dynamic_float", "quantized::linear_dynamic.default", inputs="(torch.randn(2, 8),)",
            module="torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(8, 4)), "
                   "{torch.nn.Linear}, dtype=torch.qint8)", opset=13),
    FixCase("autograd.my_add", "prim::PythonOp[MyAddPyOp]", example="autograd_python_op",
            with_fixes=AUTOGRAD_FIXES[1:]),
    FixCase("autograd.my_clip", "prim::PythonOp[MyClip]", example="autograd_python_op",
            with_fixes=(AUTOGRAD_FIXES[0], AUTOGRAD_FIXES[2])),
    FixCase("autograd.my_relu", "prim::PythonOp[MyRelu]", example="autograd_python_op",
            with_fixes=AUTOGRAD_FIXES[:2]),
    FixCase("autograd.pythonop_dispatch", "prim::PythonOp[MyAddPyOp]", example="autograd_python_op",
            with_fixes=(("autograd.pythonop_dispatch", "prim::PythonOp[MyClip]"),
                        ("autograd.pythonop_dispatch", "prim::PythonOp[MyRelu]"))),
    FixCase("autograd.static_symbolic", "prim::PythonOp[MyRelu]", example="autograd_python_op",
            params={"op_type": "Relu"}, with_fixes=AUTOGRAD_FIXES[:2]),
    FixCase("custom_domain.threshold_rknn", "aten::threshold.default", example="threshold",
            xfail={TORCHSCRIPT: CUSTOM_RUNTIME}),
    # -- generic: any op ----------------------------------------------------------------------------
    FixCase("standard.one_to_one", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)",
            params={"op_type": "Acosh"}),
    FixCase("standard.inputs_as_traced", "aten::grid_sampler.default", "F.grid_sample(x, y, align_corners=False)",
            "(torch.randn(1, 2, 5, 5), torch.rand(1, 3, 4, 2) * 2 - 1)", opset=16),
    FixCase("bridge.torchlib", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)"),
    FixCase("aten_fallback.aten_op", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)",
            xfail={TORCHSCRIPT: "writes an ATen fallback node: ONNX Runtime cannot run it"}),
    FixCase("custom_domain.custom_op", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)",
            xfail={TORCHSCRIPT: CUSTOM_RUNTIME}),
    FixCase("dynamo.inline_implementation", "mylib::softclip.default", example="library_custom_op"),
    FixCase("dynamo.custom_domain_node", "aten::acosh.default", "torch.acosh(x)", "(torch.rand(3, 4) + 1.5,)",
            xfail={DYNAMO: CUSTOM_RUNTIME}),
]

BY_ID = {case.template_id: case for case in CASES}
