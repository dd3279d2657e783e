"""Stubs compile for any kind and match the op's real schema."""
from __future__ import annotations

import inspect

import pytest
import torch

from fixport.core.exporters.template_compiler import compile_template_source
from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec, validate_mapping
from fixport.core.project.template_form import injected_names_used
from fixport.symbolics.library import parse_template_source
from fixport.symbolics.stubs import PythonOpSignature, generate_stub


@pytest.fixture(scope="module")
def library_op():
    lib = torch.library.Library("fixport_test", "DEF")
    lib.define("scale_shift(Tensor x, float scale, int shift, bool flag=False) -> Tensor")
    yield "fixport_test::scale_shift"
    del lib


class MyClip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, min):
        return x.clamp(min=min)


KINDS = ["aten::threshold", "aten::asinh", "aten::selu", "aten::upsample_bicubic2d",
         "aten::scaled_dot_product_attention", "aten::unflatten", "aten::add", "aten::conv2d",
         "aten::layer_norm", "aten::relu_", "torchvision::deform_conv2d", "torchvision::roi_align",
         "nosuch::op", "prim::PythonOp"]


@pytest.mark.parametrize("kind", KINDS)
def test_stub_compiles_and_parses(kind):
    import torchvision  # noqa: F401  (registers torchvision::* schemas)

    source = generate_stub(kind, opset=12, input_types=["Float(2, 3)"])
    info = parse_template_source(source)
    assert info.fits == [kind]
    fn = compile_template_source(source, {}, f"<stub {kind}>")
    assert callable(fn) and "TODO" in source
    assert injected_names_used(source) == set(), "a stub imports what it uses, like every template"
    assert inspect.unwrap(fn).__globals__["params"] == {}


def test_stub_matches_schema_names_and_descriptors():
    source = generate_stub("aten::threshold", opset=12)
    assert "@parse_args('v', 'v', 'v')" in source or "@parse_args('v', 't', 't')" in source or \
        "def symbolic(g, self, threshold, value)" in source
    assert "def symbolic(g, self, threshold, value)" in source
    deform = generate_stub("torchvision::deform_conv2d", opset=19)
    assert ("def symbolic(g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, "
            "dilation_h, dilation_w, groups, offset_groups, use_mask)") in deform
    assert "'i', 'i', 'i', 'i', 'i', 'i', 'i', 'i', 'b')" in deform


def test_stub_for_torch_library_op(library_op):
    source = generate_stub(library_op, opset=12)
    assert "@parse_args('v', 'f', 'i', 'b')" in source
    assert "def symbolic(g, x, scale, shift, flag)" in source
    spec = MappingSpec(library_op, None, "user.x", source, {})
    assert validate_mapping(spec, 12) == []


def test_stub_for_python_op():
    source = generate_stub("prim::PythonOp", opset=12, python_op=MyClip)
    assert "def symbolic(g, x, min, **kwargs)" in source
    assert "prim::PythonOp[MyClip]" in source
    source = generate_stub("prim::PythonOp", opset=12, python_op=PythonOpSignature("F", ["a", "lambda"]))
    compile_template_source(source, {}, "<stub F>")
    spec = MappingSpec("prim::PythonOp", None, "user.f", generate_stub("prim::PythonOp", opset=12, python_op=MyClip),
                       {}, "MyClip")
    assert validate_mapping(spec, 12, MyClip.forward) == []


def test_stub_fallback_star_args():
    source = generate_stub("nosuch::op", opset=12)
    assert "def symbolic(g, *args)" in source
