"""Registration: kind/instance/PythonOp mappings, errors with lines, exact registry restore."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.onnx._internal.torchscript_exporter import registration

from fixport.core.exporters.template_compiler import TemplateError, compile_template_source
from fixport.core.exporters.torchscript.symbolic_registration import (
    MappingSpec,
    registered_mappings,
    registry_state,
    validate_mapping,
)
from fixport.symbolics.library import TemplateLibrary
from tests.fixport_export_helpers import Lambda, assert_matches_torch, key_of, spec_for


class MyAddPyOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return 2 * a + b


class MyClip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, min):
        return x.clamp(min=min)


class MyRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0)


def _autograd_model():
    return Lambda(lambda x, y: MyRelu.apply(MyClip.apply(MyAddPyOp.apply(x, y), -0.5)))


def test_compile_errors_name_the_line():
    with pytest.raises(TemplateError) as error:
        compile_template_source("x = 1\ndef symbolic(g, x)\n    pass\n", {}, "<t1>")
    assert error.value.line == 2
    with pytest.raises(TemplateError) as error:
        compile_template_source("x = 1\ny = 2\n", {}, "<t2>")
    assert "symbolic" in error.value.message
    with pytest.raises(TemplateError) as error:
        compile_template_source("a = 1\nb = params['missing']\n", {}, "<t3>")
    assert error.value.line == 2


def test_a_template_compiles_once_per_source_and_params():
    """Re-exports reuse the compiled symbolic; an edit or other params compile afresh, with the new values."""
    source = "params = {'scale': 1.0}\n\ndef symbolic(g, x):\n    return params['scale']\n"
    first = compile_template_source(source, {"scale": 2.0}, "<template cache-test>")
    assert compile_template_source(source, {"scale": 2.0}, "<template cache-test>") is first
    assert first(None, None) == 2.0
    other_params = compile_template_source(source, {"scale": 3.0}, "<template cache-test>")
    assert other_params is not first and other_params(None, None) == 3.0
    edited = compile_template_source(source.replace("params['scale']", "-params['scale']"), {"scale": 2.0},
                                     "<template cache-test>")
    assert edited(None, None) == -2.0


def test_validate_mapping_arity_and_opset():
    bad = MappingSpec("aten::threshold", None, "t", "def symbolic(g, x):\n    return x\n", {})
    problems = validate_mapping(bad, 12)
    assert problems and problems[0].line == 1 and "3" in problems[0].message
    spec = spec_for("decompose.threshold_where", "aten::threshold")
    assert validate_mapping(spec, 12) == []
    assert "opset" in validate_mapping(spec, 8)[0].message
    clip = spec_for("autograd.my_clip", "prim::PythonOp", python_op_name="MyClip")
    assert validate_mapping(clip, 12, MyClip.forward) == []
    assert validate_mapping(clip, 12, MyRelu.forward)


def _load_every_opset_symbolic() -> None:
    """The exporter registers its symbolic_opsetN functions on the first export of a process;
    export once so the snapshot below sees the registry as every later export does."""
    import io

    torch.onnx.export(Lambda(torch.relu), (torch.randn(2),), io.BytesIO(), dynamo=False, opset_version=15)


def test_registry_restored_exactly():
    _load_every_opset_symbolic()
    before = registry_state()
    builtin_threshold = registration.registry.get_function_group("aten::threshold").get(12)
    specs = [spec_for("decompose.threshold_where", "aten::threshold"),
             spec_for("standard.asinh", "aten::asinh"),
             spec_for("onnxscript.selu_function", "aten::selu"),
             spec_for("autograd.my_relu", "prim::PythonOp", python_op_name="MyRelu")]
    with registered_mappings(specs, 15, key_of) as custom_opsets:
        assert registration.registry.get_function_group("aten::threshold").get(15) is not builtin_threshold
        assert registration.registry.is_registered_op("aten::asinh", 15)
        import io
        torch.onnx.export(Lambda(F.selu), (torch.randn(2, 3),), io.BytesIO(), dynamo=False,
                          opset_version=15, custom_opsets=custom_opsets)
    assert registry_state() == before
    assert registration.registry.get_function_group("aten::threshold").get(12) is builtin_threshold
    assert not registration.registry.is_registered_op("aten::asinh", 15)
    assert not registration.registry.is_registered_op("prim::PythonOp", 15)


def test_registry_restored_after_error():
    before = registry_state()
    with pytest.raises(RuntimeError):
        with registered_mappings([spec_for("standard.asinh", "aten::asinh")], 12, key_of):
            raise RuntimeError("boom")
    assert registry_state() == before


@pytest.mark.parametrize("opset", [12, 17])
def test_python_op_dispatcher_by_name(opset):
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    specs = [spec_for("autograd.my_add", "prim::PythonOp[MyAddPyOp]"),
             spec_for("autograd.my_clip", "prim::PythonOp", python_op_name="MyClip"),
             spec_for("autograd.my_relu", "prim::PythonOp[MyRelu]")]
    proto = assert_matches_torch(_autograd_model(), [x, y], specs, opset, autograd_inlining=False)
    assert {"Clip", "Relu", "Add", "Mul"} <= {n.op_type for n in proto.graph.node}


def test_tutorial_dispatcher_template():
    spec = spec_for("autograd.pythonop_dispatch", "prim::PythonOp")
    specs = [MappingSpec("prim::PythonOp", None, spec.template_id, spec.source, {}, name) for name in
             ("MyAddPyOp", "MyClip", "MyRelu")]
    assert_matches_torch(_autograd_model(), [torch.randn(3, 4), torch.randn(3, 4)], specs, 12,
                         autograd_inlining=False)


def test_static_symbolic_route():
    library = TemplateLibrary(user_dir="/nonexistent")
    fn = compile_template_source(library.get("autograd.static_symbolic").source, {"op_type": "Relu"}, "<s>")

    class StaticRelu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(min=0)

        symbolic = staticmethod(fn)

    proto = assert_matches_torch(Lambda(StaticRelu.apply), [torch.randn(3, 4)], [], 12,
                                 autograd_inlining=False)
    assert [n.op_type for n in proto.graph.node] == ["Relu"]


def test_instance_level_mapping_falls_back_to_builtin():
    x = torch.randn(3, 4)
    model = Lambda(lambda t: F.threshold(t, 0.0, 0.0) + F.threshold(t, 0.3, 5.0))
    traced = torch.jit.trace(model, (x,))
    keys = [key_of(n) for n in traced.graph.nodes() if n.kind() == "aten::threshold"]
    assert len(keys) == 2 and keys[0] != keys[1]
    # Only the second instance (non-zero threshold) needs the template; the first keeps Relu.
    spec = spec_for("decompose.threshold_where", "aten::threshold", instance=keys[1])
    proto = assert_matches_torch(model, [x], [spec], 12)
    ops = [n.op_type for n in proto.graph.node]
    assert "Relu" in ops and "Where" in ops


def test_instance_mapping_overrides_kind_mapping():
    x = torch.randn(3, 4)
    model = Lambda(lambda t: torch.asinh(t) + torch.asinh(t * 2))
    traced = torch.jit.trace(model, (x,))
    keys = [key_of(n) for n in traced.graph.nodes() if n.kind() == "aten::asinh"]
    specs = [spec_for("standard.asinh", "aten::asinh"),
             spec_for("decompose.asinh_log", "aten::asinh", instance=keys[1])]
    proto = assert_matches_torch(model, [x], specs, 12)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Asinh") == 1 and "Log" in ops


def test_library_override_and_reset(tmp_path):
    library = TemplateLibrary(user_dir=tmp_path)
    source = library.get("standard.asinh").source.replace('title="asinh -> ONNX Asinh"', 'title="my asinh"')
    library.save_user_template(source)
    assert library.get("standard.asinh").title == "my asinh" and library.is_overridden("standard.asinh")
    assert TemplateLibrary(user_dir=tmp_path).get("standard.asinh").title == "my asinh"
    library.reset("standard.asinh")
    assert library.get("standard.asinh").title == "asinh -> ONNX Asinh"
    assert not list(tmp_path.iterdir())


def test_user_override_is_what_fix_auto_exports_and_reset_brings_the_builtin_back(tmp_path, monkeypatch):
    """The library's one lookup (`get`) puts the user's template first everywhere: in what
    `fix --auto` picks, in the opsets an applied mapping is checked against, in the export."""
    import onnx

    from fixport.core.exporters.torchscript.applied_fixes import mapping_specs
    from fixport.core.project.project import load_project
    from fixport.examples.catalog import list_examples
    from tests.conftest import run_main

    monkeypatch.setenv("HOME", str(tmp_path))  # the command line's user templates live under $HOME
    library = TemplateLibrary(user_dir=tmp_path / ".config" / "fixport" / "templates")
    builtin_source = library.get("decompose.threshold_where").source
    greater = "op.Where(op.Greater(self, _like(threshold, self)), self, _like(value, self))"
    assert greater in builtin_source
    override = builtin_source.replace(greater, "op.Where(op.Not(op.LessOrEqual(self, _like(threshold, self))), self, "
                                               "_like(value, self))")
    library.save_user_template(override.replace("min_opset=9,", "min_opset=12,"))
    example = next(e for e in list_examples() if e.name == "threshold")

    def fix_auto(name: str) -> tuple[str, set[str]]:
        project, fixed = tmp_path / f"{name}.fixport.json", tmp_path / f"{name}.onnx"
        ran = run_main("fix", str(example.path), "--auto", "-o", str(project), "--onnx", str(fixed))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (mapping,) = load_project(project).mappings
        assert mapping.template_id == "decompose.threshold_where"
        return mapping.source, {node.op_type for node in onnx.load(str(fixed)).graph.node}

    source, ops = fix_auto("overridden")
    assert source == library.get("decompose.threshold_where").source and {"LessOrEqual", "Not"} <= ops
    assert "Greater" not in ops
    (spec,) = mapping_specs(load_project(tmp_path / "overridden.fixport.json").mappings)
    assert spec.min_opset == 12  # the user's template's metadata, kept by the saved fix, not the built-in's

    library.reset("decompose.threshold_where")
    source, ops = fix_auto("reset")
    assert source == builtin_source and "Greater" in ops and "LessOrEqual" not in ops


def test_ranking_always_offers_something():
    library = TemplateLibrary(user_dir="/nonexistent")
    offers = library.templates_for("aten::threshold", 12)
    assert offers[0].template_id == "decompose.threshold_where" and offers[-1].template_id == "stub"
    assert library.templates_for("prim::PythonOp[MyClip]", 12)[0].template_id == "autograd.my_clip"
    roi_align = [o.template_id for o in library.templates_for("torchvision::roi_align", 12)]
    assert roi_align[0] == "torchvision.roi_align_aligned"  # made for the op, ahead of the generic custom domain
    assert "torchvision.deform_conv2d_custom" in roi_align
    bridge = [o for o in library.templates_for("aten::erfc", 18) if o.template_id == "bridge.torchlib"]
    assert bridge and "torch_lib" in bridge[0].why
    assert library.templates_for("weird::thing", 12)[-1].template_id == "stub"
    assert all(o.why for o in offers)


def test_a_re_export_reuses_the_traced_graph_only_for_the_same_module_and_options(model_file) -> None:
    """Apply re-exports the same module: its traced graph is converted once; another opset, or the
    file edited (a new module), converts afresh and shows the edit."""
    import os

    from fixport.core.analysis.analysis import analyze
    from fixport.core.records.requests import AnalyzeRequest
    from fixport.core.records.results import ModelRequest

    source = """
        import torch

        class Scale(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2.5

        def build():
            return Scale().eval(), (torch.randn(2, 3),)
    """
    path = model_file("scale.py", source)
    request = ModelRequest(str(path))
    first = analyze(AnalyzeRequest(request)).source_graph
    assert analyze(AnalyzeRequest(request)).source_graph is first
    other_opset = analyze(AnalyzeRequest(request, {"opset": 13})).source_graph
    assert other_opset is not first and [n.id for n in other_opset.nodes] == [n.id for n in first.nodes]

    edited = model_file("scale.py", source.replace("2.5", "7.5"))
    stat = edited.stat()
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a new file to the cache
    again = analyze(AnalyzeRequest(request)).source_graph
    assert again is not first
    constants = [n.attributes.get("value") for n in again.nodes if n.kind == "prim::Constant"]
    assert 7.5 in constants and 2.5 not in constants


def test_a_saved_fix_keeps_its_templates_opsets_without_a_library(monkeypatch):
    """The TorchScript export reads each fix's opset range from the saved fix's own metadata: no
    template library is built per export; an edited fix is tried at any opset."""
    from dataclasses import replace

    from fixport.core.exporters.torchscript.applied_fixes import mapping_specs
    from fixport.core.project.project import FixMapping

    template = TemplateLibrary().get("decompose.threshold_where")
    saved = FixMapping("aten::threshold", template.id, template.source)

    def no_library(*args, **kwargs):
        raise AssertionError("a TemplateLibrary was built for an export")

    monkeypatch.setattr(TemplateLibrary, "__init__", no_library)
    spec, edited = mapping_specs([saved, replace(saved, edited=True)])
    assert (spec.min_opset, spec.max_opset) == (template.min_opset, template.max_opset) and template.min_opset > 1
    assert (edited.min_opset, edited.max_opset) == (1, None)
