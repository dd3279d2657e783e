"""Every built-in template, exported for real and compared with torch through ONNX Runtime."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from fixport.core.exporters.template_compiler import compile_template_source
from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec
from fixport.core.project.template_form import injected_names_used
from fixport.symbolics.api import FIX_METADATA
from tests.fixport_export_helpers import (
    LIBRARY,
    Lambda,
    assert_matches_torch,
    export,
    opinfo_inputs,
    spec_for,
)

REPO = Path(__file__).resolve().parent.parent


def test_library_lists_without_torch():
    code = ("import sys; from fixport.symbolics.library import TemplateLibrary; "
            "lib = TemplateLibrary(user_dir='/nonexistent'); assert len(lib.all()) >= 20, lib.errors; "
            "assert 'torch' not in sys.modules, 'torch imported'; "
            "assert lib.templates_for('aten::asinh', 9)[0].template_id == 'standard.asinh'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=".")


def test_every_builtin_has_schema_docstring_and_symbolic():
    builtins = [info for info in LIBRARY.all() if info.builtin]
    assert builtins
    for info in builtins:
        assert info.docstring and info.symbolic_line, info.id
        assert "::" in info.docstring or "forward" in info.docstring.lower() or "*" in info.fits, info.id
        ast.parse(info.source)


def _module_name(path: Path) -> str:
    return "fixport." + ".".join(path.resolve().relative_to(REPO).with_suffix("").parts)


def test_every_builtin_is_a_plain_module_that_imports_what_it_uses():
    """No names injected: each template imports as a module and its ``symbolic`` is the one
    Fixport compiles; ``params`` holds the declared defaults until Fixport sets the chosen ones."""
    for info in [t for t in LIBRARY.all() if t.builtin]:
        assert injected_names_used(info.source) == set(), info.id
        module = importlib.import_module(_module_name(Path(info.path)))
        metadata = getattr(module.symbolic, FIX_METADATA, None) or module.TEMPLATE  # @fix(...) or TEMPLATE = {...}
        assert callable(module.symbolic) and metadata["id"] == info.id
        if info.params:
            assert module.params == info.default_params(), info.id
    folders = {Path(t.path).parent.name for t in LIBRARY.all()}
    assert "templates" in folders, "the example models' templates are built-ins too"
    assert not any(Path(t.path).name == "__init__.py" for t in LIBRARY.all())


def test_template_params_are_the_chosen_values_over_the_defaults():
    source = LIBRARY.get("standard.one_to_one").source
    fn = compile_template_source(source, {"op_type": "Asinh"}, "<one_to_one>")
    assert fn.__globals__["params"] == {"op_type": "Asinh", "attributes": "", "keep_constant_inputs": False}
    assert_matches_torch(Lambda(torch.asinh), [torch.randn(3, 4)],
                         [spec_for("standard.one_to_one", "aten::asinh", op_type="Asinh")], 9)


def test_templates_in_the_old_form_keep_working():
    """Templates written when Fixport injected torch, parse_args, ... and params still export."""
    old_form = ('"""aten::asinh as a scaled Asinh."""\n\n'
                "@parse_args('v')\n"
                "def symbolic(g, self):\n"
                "    scale = g.op('Constant', value_t=torch.tensor(params['scale']))\n"
                "    return g.op('Div', g.op('Asinh', g.op('Mul', self, scale)), scale)\n")
    assert injected_names_used(old_form) == {"parse_args", "torch", "params"}
    spec = MappingSpec("aten::asinh", None, "user.old", old_form, {"scale": 1.0})
    proto = assert_matches_torch(Lambda(torch.asinh), [torch.randn(3, 4)], [spec], 9)
    assert {"Asinh", "Mul", "Div"} <= {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("name, template_id, opset", [
    ("asinh", "standard.asinh", 9), ("acosh", "standard.acosh", 9), ("atanh", "standard.atanh", 9),
    ("asinh", "decompose.asinh_log", 7), ("acosh", "decompose.acosh_log", 8),
    ("atanh", "decompose.atanh_log", 7)])
def test_inverse_hyperbolic_on_opinfo_samples(name, template_id, opset):
    fn = getattr(torch, name)
    for sample, _, _ in opinfo_inputs(name):
        assert_matches_torch(Lambda(fn), [sample], [spec_for(template_id, f"aten::{name}")], opset)


@pytest.mark.parametrize("opset", [9, 12])
def test_threshold_where_on_opinfo_samples(opset):
    samples = opinfo_inputs("nn.functional.threshold")
    assert samples
    for sample, args, _kwargs in samples:
        model = Lambda(lambda x, a=args: F.threshold(x, *a))
        assert_matches_torch(model, [sample], [spec_for("decompose.threshold_where", "aten::threshold")], opset)


@pytest.mark.parametrize("template_id, opset", [("decompose.selu", 7), ("decompose.selu", 13),
                                                ("onnxscript.selu_function", 15),
                                                ("onnxscript.selu_function", 18)])
def test_selu_on_opinfo_samples(template_id, opset):
    for sample, _, _ in opinfo_inputs("nn.functional.selu"):
        proto = assert_matches_torch(Lambda(F.selu), [sample], [spec_for(template_id, "aten::selu")], opset)
    if template_id.startswith("onnxscript"):
        assert [f.name for f in proto.functions] == ["Selu"]
        assert {o.domain: o.version for o in proto.opset_import}["custom-onnx-script"] == 1


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("how", ["scale", "size"])
def test_bicubic_resize(align_corners, how):
    x = torch.randn(1, 2, 5, 7)
    kwargs = {"scale_factor": 2.0} if how == "scale" else {"size": (9, 11)}
    model = Lambda(lambda t: F.interpolate(t, mode="bicubic", align_corners=align_corners, **kwargs))
    spec = spec_for("decompose.upsample_bicubic2d_resize", "aten::upsample_bicubic2d")
    proto = assert_matches_torch(model, [x], [spec], 11)
    resize = next(n for n in proto.graph.node if n.op_type == "Resize")
    attrs = {a.name: a for a in resize.attribute}
    assert attrs["cubic_coeff_a"].f == pytest.approx(-0.75)


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("variant", ["plain", "bool_mask", "float_mask", "causal", "scale"])
def test_sdpa_decomposition(opset, variant):
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 6)
    mask = {"bool_mask": torch.rand(4, 5) > 0.3, "float_mask": torch.randn(4, 5)}.get(variant)
    if variant == "bool_mask":
        mask[:, 0] = True
    k = q.clone()[:, :, :4] if variant == "causal" else k
    v = v[:, :, :4] if variant == "causal" else v
    extra = {"is_causal": variant == "causal", **({"scale": 0.3} if variant == "scale" else {})}
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    model = Lambda(lambda *t: F.scaled_dot_product_attention(*t[:3], attn_mask=t[3] if len(t) > 3 else None, **extra))
    assert_matches_torch(model, inputs, [spec_for("decompose.scaled_dot_product_attention",
                                                   "aten::scaled_dot_product_attention")], opset)


@pytest.mark.parametrize("opset", [9, 12])
def test_tiny_vit_exports_below_13_with_unflatten_and_sdpa(opset):
    from torchvision.models import VisionTransformer

    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2,
                              hidden_dim=16, mlp_dim=32, num_classes=4).eval()
    specs = [spec_for("decompose.unflatten_reshape", "aten::unflatten"),
             spec_for("decompose.scaled_dot_product_attention", "aten::scaled_dot_product_attention")]
    assert_matches_torch(model, [torch.randn(2, 3, 32, 32)], specs, opset)


def test_unflatten_on_opinfo_samples():
    for sample, args, _kwargs in opinfo_inputs("unflatten"):
        model = Lambda(lambda x, a=args: torch.unflatten(x, *a))
        assert_matches_torch(model, [sample], [spec_for("decompose.unflatten_reshape", "aten::unflatten")], 9)


def test_one_to_one_generic():
    x = torch.randn(3, 4)
    spec = spec_for("standard.one_to_one", "aten::asinh", op_type="Asinh")
    assert_matches_torch(Lambda(torch.asinh), [x], [spec], 9)
    spec = spec_for("standard.one_to_one", "aten::threshold", op_type="ThresholdedRelu",
                    attributes="alpha_f=0.5")
    model = Lambda(lambda t: F.threshold(t, 0.5, 0.0))
    assert_matches_torch(model, [x], [spec], 10)


def _node(proto, op_type):
    return next(n for n in proto.graph.node if n.op_type == op_type)


def _attrs(node):
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def test_custom_domain_generic_and_rknn():
    model = Lambda(lambda t: F.threshold(t, 0.1, 20.0))
    x = torch.randn(2, 3)
    spec = spec_for("custom_domain.custom_op", "aten::threshold", domain="trt_plugins",
                    op_name="Threshold", attributes="1:threshold_f, 2:value_f")
    proto = export(model, [x], [spec], 12)
    node = _node(proto, "Threshold")
    assert node.domain == "trt_plugins" and len(node.input) == 1
    assert _attrs(node) == pytest.approx({"threshold": 0.1, "value": 20.0})
    assert {o.domain: o.version for o in proto.opset_import}["trt_plugins"] == 1
    proto = export(model, [x], [spec_for("custom_domain.threshold_rknn", "aten::threshold")], 12)
    node = _node(proto, "cstThreshold")
    assert node.domain == "rknn_cst" and _attrs(node) == pytest.approx({"threshold": 0.1, "value": 20.0})
    assert "rknn_cst" in {o.domain for o in proto.opset_import}
    assert not LIBRARY.get("custom_domain.custom_op").runs_in_onnxruntime


def test_aten_fallback_node():
    proto = export(Lambda(torch.asinh), [torch.randn(2, 3)],
                   [spec_for("aten_fallback.aten_op", "aten::asinh")], 12)
    node = _node(proto, "ATen")
    assert node.domain == "org.pytorch.aten" and _attrs(node)["operator"] == b"asinh"
    assert "org.pytorch.aten" in {o.domain for o in proto.opset_import}


def _deform_inputs(use_mask, out_hw=(4, 3)):
    torch.manual_seed(0)
    x, weight = torch.randn(1, 4, 7, 7), torch.randn(6, 2, 3, 3)
    offset = torch.randn(1, 2 * 2 * 9, *out_hw)
    mask = torch.rand(1, 2 * 9, *out_hw) if use_mask else None
    return x, weight, offset, mask, torch.randn(6)


@pytest.mark.parametrize("use_mask", [False, True])
def test_deform_conv2d_onnx_deformconv(use_mask):
    from torchvision.ops import deform_conv2d

    x, weight, offset, mask, bias = _deform_inputs(use_mask)
    inputs = [x, weight, offset, bias] + ([mask] if use_mask else [])
    model = Lambda(lambda x, w, o, b, *m: deform_conv2d(x, o, w, b, stride=(2, 1), padding=(1, 0),
                                                          dilation=(1, 2), mask=m[0] if m else None))
    proto = assert_matches_torch(model, inputs, [spec_for("torchvision.deform_conv2d_onnx",
                                                           "torchvision::deform_conv2d")], 19)
    attrs = _attrs(_node(proto, "DeformConv"))
    assert attrs["strides"] == [2, 1] and attrs["pads"] == [1, 0, 1, 0] and attrs["offset_group"] == 2


def test_deform_conv2d_custom_domain():
    from torchvision.ops import deform_conv2d

    x, weight, offset, _, bias = _deform_inputs(False, (5, 5))
    model = Lambda(lambda x, w, o: deform_conv2d(x, o, w, bias))
    proto = export(model, [x, weight, offset], [spec_for("torchvision.deform_conv2d_custom",
                                                          "torchvision::deform_conv2d")], 12)
    node = _node(proto, "DeformConv2d")
    assert node.domain == "custom" and _attrs(node)["groups"] == 2 and _attrs(node)["offset_groups"] == 2
    assert {o.domain: o.version for o in proto.opset_import}["custom"] == 1


@pytest.mark.parametrize("kind, fn, opset", [
    ("aten::asinh", torch.asinh, 18), ("aten::selu", F.selu, 18), ("aten::acosh", torch.acosh, 20),
    ("aten::erfc", torch.erfc, 18), ("aten::logaddexp", None, 18), ("aten::expm1", torch.expm1, 18)])
def test_torchlib_bridge(kind, fn, opset):
    x = torch.rand(3, 4) * 0.9 + (1.0 if kind == "aten::acosh" else 0.0)
    model = Lambda(fn) if fn is not None else Lambda(lambda t: torch.logaddexp(t, t * 2 - 1))
    proto = assert_matches_torch(model, [x], [spec_for("bridge.torchlib", kind)], opset)
    assert all(node.domain in ("", "ai.onnx") for node in proto.graph.node)


def test_torchlib_bridge_on_opinfo_samples():
    for sample, _, _ in opinfo_inputs("asinh"):
        assert_matches_torch(Lambda(torch.asinh), [sample], [spec_for("bridge.torchlib", "aten::asinh")], 18)
