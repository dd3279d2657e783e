"""A saved fix keeps its template's metadata, one registry serves both exporters' fix routes, and
templates in the older forms are converted to the current one when they are loaded (issue 47, item 7)."""
from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch

from fixport.core.exporters.dynamo.fixes import fixes_from
from fixport.core.exporters.fix_registry import FixRegistry
from fixport.core.exporters.torchscript.applied_fixes import applied_mappings
from fixport.core.project.fix_meta import FixMeta, metadata_reads
from fixport.core.project.project import FORMAT_VERSION, FixMapping, Project, load_project, save_project
from fixport.core.project.template_form import in_current_form, injected_names_used
from fixport.symbolics.library import TemplateLibrary
from tests.fixport_export_helpers import LIBRARY, export, run_ort
from tests.fixport_export_helpers import Lambda as Wrapped

MEDIAN = LIBRARY.get("onnx_function.median_dim_topk")


class Median(torch.nn.Module):
    def forward(self, x):
        return x.median(dim=1)


def _median_fix(kind: str = "aten::median") -> FixMapping:
    """The shared median fix, for the op as TorchScript names it, or as an FX overload."""
    return FixMapping(target_kind=kind, template_id=MEDIAN.id, source=MEDIAN.source)


def _matches_torch(proto: onnx.ModelProto, model: torch.nn.Module, inputs: list[torch.Tensor]) -> None:
    expected = model(*inputs)
    for got, want in zip(run_ort(proto, inputs), expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(got, want.numpy(), atol=1e-5, rtol=0)


def test_a_fix_keeps_its_templates_metadata_and_the_project_saves_it(tmp_path: Path) -> None:
    fix = _median_fix()
    assert fix.meta == FixMeta(template_id=MEDIAN.id, family="onnx_function", fits=("aten::median.dim",),
                               exporters=("torchscript", "dynamo"), params={}, min_opset=11, max_opset=None)
    path = tmp_path / "p.fixport.json"
    save_project(Project(model_path=str(tmp_path / "m.py"), mappings=[fix]), path)
    assert json.loads(path.read_text())["mappings"][0]["meta"]["fits"] == ["aten::median.dim"]
    before = metadata_reads()
    loaded = load_project(path).mappings[0]
    assert loaded.meta == fix.meta and metadata_reads() == before, "a saved fix's metadata is not read again"


def test_a_project_saved_before_fixes_kept_metadata_loads_and_fills_it_in(tmp_path: Path) -> None:
    path = tmp_path / "old.fixport.json"
    path.write_text(json.dumps({"format_version": FORMAT_VERSION, "model_path": "m.py", "mappings": [
        {"target_kind": "aten::median", "template_id": MEDIAN.id, "source": MEDIAN.source}]}))
    before = metadata_reads()
    project = load_project(path)
    assert metadata_reads() == before + 1 and project.mappings[0].meta.family == "onnx_function"
    assert project.load_notes == []  # the source was in the current form already
    save_project(project, path)
    assert json.loads(path.read_text())["mappings"][0]["meta"]["template_id"] == MEDIAN.id


def test_the_dynamo_route_reads_no_metadata_and_compiles_each_fix_once() -> None:
    fix = _median_fix("aten::median.dim")
    before = metadata_reads()
    registry = FixRegistry([fix])
    fixes = fixes_from([fix], registry)
    assert registry.compiled(fix) is registry.compiled(fix) and registry.compiles == 1
    assert registry.for_op("aten::median.dim") == [fix] and registry.for_op("aten::median") == []
    table = {target: per_node[None] for target, per_node in fixes.translations.items()}
    assert list(table) == [torch.ops.aten.median.dim]
    inputs = [torch.randn(3, 7, 5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Median(), tuple(inputs), dynamo=True, custom_translation_table=table,
                                    optimize=False, verbose=False)
    _matches_torch(program.model_proto, Median(), inputs)
    assert metadata_reads() == before, "the export read no template's metadata from its source"


def test_the_torchscript_route_registers_from_the_same_registry_without_reading_metadata() -> None:
    fix = _median_fix()
    inputs = [torch.randn(3, 7, 5)]
    before = metadata_reads()
    buffer = io.BytesIO()
    with applied_mappings([fix], 17) as custom_opsets, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Median(), tuple(inputs), buffer, dynamo=False, opset_version=17,
                          custom_opsets=custom_opsets)
    _matches_torch(onnx.load_from_string(buffer.getvalue()), Median(), inputs)
    assert metadata_reads() == before


# The form of templates from before they imported their names: TEMPLATE, with torch, parse_args and
# params injected into the module's globals.
INJECTED_UNDER_TEMPLATE = '''"""aten::asinh as a scaled Asinh."""
TEMPLATE = {"id": "user.scaled_asinh", "title": "Scaled asinh", "description": "Asinh(x * s) / s.",
            "family": "user", "fits": ["aten::asinh"], "min_opset": 9, "max_opset": None,
            "params": {"scale": {"type": "float", "default": 2.0}}, "runs_in_onnxruntime": True,
            "custom_opsets": {}, "notes": ""}


@parse_args("v")
def symbolic(g, self):
    scale = g.op("Constant", value_t=torch.tensor(params["scale"]))
    return g.op("Div", g.op("Asinh", g.op("Mul", self, scale)), scale)
'''
# The fixes of early projects: a bare symbolic, no metadata, the same names injected.
BARE_INJECTED = '''"""aten::asinh as a scaled Asinh."""

@parse_args("v")
def symbolic(g, self):
    scale = g.op("Constant", value_t=torch.tensor(params["scale"]))
    return g.op("Div", g.op("Asinh", g.op("Mul", self, scale)), scale)
'''


def _asinh_onnx(source: str) -> str:
    from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec

    spec = MappingSpec("aten::asinh", None, "user.scaled_asinh", source, {"scale": 3.0})
    inputs = [torch.randn(3, 4)]
    proto = export(Wrapped(torch.asinh), inputs, [spec], 9)
    np.testing.assert_allclose(run_ort(proto, inputs)[0], (torch.asinh(inputs[0] * 3.0) / 3.0).numpy(), atol=1e-5)
    return onnx.printer.to_text(proto.graph)


def test_an_old_form_user_template_is_converted_as_it_is_read_and_the_user_told(tmp_path: Path) -> None:
    (tmp_path / "user.scaled_asinh.py").write_text(INJECTED_UNDER_TEMPLATE, encoding="utf-8")
    library = TemplateLibrary(user_dir=tmp_path)
    converted = library.get("user.scaled_asinh").source
    assert injected_names_used(converted) == set() and "import torch\n" in converted
    assert "@fix(\n" in converted and "TEMPLATE =" not in converted  # the dict is now @fix(...)
    assert "params = default_params(symbolic)" in converted
    assert [note.split(": ")[0] for note in library.notes] == [str(tmp_path / "user.scaled_asinh.py")]
    assert library.errors == [] and library.get("user.scaled_asinh").default_params() == {"scale": 2.0}
    assert _asinh_onnx(converted) == _asinh_onnx(INJECTED_UNDER_TEMPLATE)
    assert in_current_form(converted) == (converted, "")  # converted once


def test_an_old_form_fix_in_a_project_is_converted_when_it_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.fixport.json"
    path.write_text(json.dumps({"format_version": FORMAT_VERSION, "model_path": "m.py", "mappings": [
        {"target_kind": "aten::asinh", "template_id": "user.scaled_asinh", "source": BARE_INJECTED,
         "params": {"scale": 3.0}, "edited": True}]}))
    project = load_project(path)
    converted = project.mappings[0].source
    assert injected_names_used(converted) == set() and "params: dict = {}" in converted
    assert len(project.load_notes) == 1 and "aten::asinh" in project.load_notes[0]
    assert project.mappings[0].meta is None  # it declares none: any opset, registered as it is
    assert _asinh_onnx(converted) == _asinh_onnx(BARE_INJECTED)
    save_project(project, path)
    assert load_project(path).load_notes == [], "the user is told once"
