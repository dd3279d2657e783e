"""One template form, ``@fix(...)`` on ``symbolic``: the older ``TEMPLATE`` dict is read and converted
to it as a template folder, a saved project or text applied from the Template dock loads, with one
note, and exports the same ONNX; Fixport's generators write it (issue 47, item 7)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from fixport.core.exporters.dynamo.fixes import fixes_from
from fixport.core.exporters.torchscript.symbolic_registration import MappingSpec
from fixport.core.project.fix_meta import REQUIRED_KEYS, template_metadata
from fixport.core.project.project import FixMapping, Project, load_project, save_project
from fixport.core.project.template_form import in_current_form
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.dynamo.offers import stub_offer
from fixport.symbolics.library import TemplateLibrary, parse_template_source
from fixport.symbolics.stubs import generate_stub
from tests.fixport_export_helpers import Lambda as Wrapped
from tests.fixport_export_helpers import assert_matches_torch, export, run_ort

# The form Fixport wrote its stubs in before @fix was the one form: imports, a TEMPLATE dict, params from it.
TORCHSCRIPT_DICT_FORM = '''"""aten::asinh as a scaled Asinh."""

import torch
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {"id": "user.scaled_asinh", "title": "Scaled asinh", "description": "Asinh(x * s) / s.",
            "family": "user", "fits": ["aten::asinh"], "min_opset": 9, "max_opset": None,
            "params": {"scale": {"type": "float", "default": 2.0, "label": "Scale"}},
            "runs_in_onnxruntime": True, "custom_opsets": {}, "notes": "Divides back by the scale."}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


@parse_args("v")
def symbolic(g, self):
    scale = g.op("Constant", value_t=torch.tensor(params["scale"]))
    return g.op("Div", g.op("Asinh", g.op("Mul", self, scale)), scale)
'''
# A dynamo template of that form: an ONNX function the dynamo exporter registers for the overload.
DYNAMO_DICT_FORM = '''"""aten::hypot.default as Sqrt(x * x + y * y)."""

from onnxscript.onnx_opset import opset18 as op

TEMPLATE = {"id": "user.hypot", "title": "hypot", "description": "Sqrt(x*x + y*y).",
            "family": "dynamo_translation", "fits": ["aten::hypot.default"], "min_opset": 18,
            "max_opset": None, "params": {}, "runs_in_onnxruntime": True, "custom_opsets": {}, "notes": ""}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


def symbolic(self, other):
    return op.Sqrt(op.Add(op.Mul(self, self), op.Mul(other, other)))
'''
HYPOT_ONNX = "op.Sqrt(op.Add(op.Mul(self, self), op.Mul(other, other)))"
HYPOT_G_OP = 'g.op("Sqrt", g.op("Add", g.op("Mul", self, self), g.op("Mul", other, other)))'


def _same_metadata(old: str, new: str) -> dict:
    """The converted template's metadata, checked equal to the old one's (the exporters aside)."""
    before, after = template_metadata(old)[0], template_metadata(new)[0]
    assert {key: after[key] for key in REQUIRED_KEYS} == {key: before[key] for key in REQUIRED_KEYS}
    return after


def _asinh_onnx(source: str) -> onnx.ModelProto:
    inputs = [torch.randn(3, 4, generator=torch.Generator().manual_seed(0))]
    proto = export(Wrapped(torch.asinh), inputs, [MappingSpec("aten::asinh", None, "user.scaled_asinh", source,
                                                              {"scale": 3.0})], 9)
    np.testing.assert_allclose(run_ort(proto, inputs)[0], (torch.asinh(inputs[0] * 3.0) / 3.0).numpy(), atol=1e-5)
    return proto


def _hypot_onnx(source: str) -> onnx.ModelProto:
    """``source`` registered as the dynamo exporter's translation of aten::hypot, exported and run."""
    mapping = FixMapping("aten::hypot.default", "user.hypot", source)
    table = {target: per_node[None] for target, per_node in fixes_from([mapping]).translations.items()}
    inputs = (torch.randn(3, 5), torch.randn(3, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(Wrapped(torch.hypot), inputs, dynamo=True, custom_translation_table=table,
                                    optimize=False, verbose=False)
    np.testing.assert_allclose(run_ort(program.model_proto, list(inputs))[0], torch.hypot(*inputs).numpy(), atol=1e-5)
    return program.model_proto


def test_a_template_dict_in_a_user_folder_loads_as_fix_with_one_note_and_exports_the_same(tmp_path: Path) -> None:
    (tmp_path / "user.scaled_asinh.py").write_text(TORCHSCRIPT_DICT_FORM, encoding="utf-8")
    library = TemplateLibrary(user_dir=tmp_path)
    converted = library.get("user.scaled_asinh").source
    assert "TEMPLATE =" not in converted and "\n@fix(\n" in converted
    assert "params = default_params(symbolic)" in converted
    assert _same_metadata(TORCHSCRIPT_DICT_FORM, converted)["exporters"] == ["torchscript"]
    assert library.get("user.scaled_asinh").default_params() == {"scale": 2.0}
    assert len(library.notes) == 1 and "its TEMPLATE dict is now @fix(...) on symbolic" in library.notes[0]
    assert in_current_form(converted) == (converted, ""), "converted once"
    assert onnx.printer.to_text(_asinh_onnx(converted).graph) == onnx.printer.to_text(
        _asinh_onnx(TORCHSCRIPT_DICT_FORM).graph)


def _dynamo_converted(folder: Path) -> str:
    (folder / "user.hypot.py").write_text(DYNAMO_DICT_FORM, encoding="utf-8")
    library = dynamo_library(user_dir=folder)
    converted = library.get("user.hypot").source
    assert "dynamo_only=" in converted and "TEMPLATE =" not in converted and len(library.notes) == 1
    assert library.templates_for("aten::hypot.default", 18)[0].template_id == "user.hypot"
    return converted


def test_a_dynamo_template_dict_loads_as_dynamo_only(tmp_path: Path) -> None:
    converted = _dynamo_converted(tmp_path)
    assert _same_metadata(DYNAMO_DICT_FORM, converted)["exporters"] == ["dynamo"]
    assert in_current_form(converted, "dynamo") == (converted, "")


@pytest.mark.slow
def test_a_dynamo_template_dict_exports_the_same_converted(tmp_path: Path) -> None:
    converted = _dynamo_converted(tmp_path)
    before, after = _hypot_onnx(DYNAMO_DICT_FORM), _hypot_onnx(converted)
    assert [n.op_type for n in after.graph.node] == [n.op_type for n in before.graph.node]


def test_a_project_saved_with_a_template_dict_fix_opens_converted_and_exports_the_same(tmp_path: Path) -> None:
    saved = FixMapping("aten::asinh", "user.scaled_asinh", TORCHSCRIPT_DICT_FORM, {"scale": 3.0}, edited=True)
    path = tmp_path / "old.fixport.json"
    save_project(Project(model_path=str(tmp_path / "m.py"), mappings=[saved]), path)
    assert json.loads(path.read_text())["mappings"][0]["source"] == TORCHSCRIPT_DICT_FORM

    project = load_project(path)
    fix = project.mappings[0]
    assert "TEMPLATE =" not in fix.source and 'torchscript_only="converted from a TEMPLATE dict' in fix.source
    assert len(project.load_notes) == 1 and "aten::asinh (user.scaled_asinh)" in project.load_notes[0]
    assert fix.meta == saved.meta and fix.params == {"scale": 3.0}, "the saved record is kept as it was"
    assert onnx.printer.to_text(_asinh_onnx(fix.source).graph) == onnx.printer.to_text(
        _asinh_onnx(TORCHSCRIPT_DICT_FORM).graph)
    save_project(project, path)
    again = load_project(path)
    assert again.load_notes == [] and again.mappings[0].source == fix.source


def test_a_dynamo_projects_template_dict_fix_is_converted_for_the_dynamo_exporter(tmp_path: Path) -> None:
    saved = FixMapping("aten::hypot.default", "user.hypot", DYNAMO_DICT_FORM)
    path = tmp_path / "old.fixport.json"
    save_project(Project(model_path=str(tmp_path / "m.py"), export_options={"exporter": "dynamo"},
                         mappings=[saved]), path)
    project = load_project(path)
    assert 'dynamo_only="converted from a TEMPLATE dict of the dynamo templates"' in project.mappings[0].source
    assert len(project.load_notes) == 1 and project.mappings[0].meta == saved.meta


def test_a_generated_torchscript_stub_is_in_fix_form_and_applies() -> None:
    stub = generate_stub("aten::hypot", opset=17, input_types=["float32[4,8]", "float32[4,8]"])
    info = parse_template_source(stub)
    assert "TEMPLATE" not in stub and info.exporters == ("torchscript",) and info.torchscript_only
    assert in_current_form(stub) == (stub, "")
    written = "\n".join(f"    return {HYPOT_G_OP}" if "raise NotImplementedError" in line else line
                        for line in stub.splitlines())
    inputs = [torch.randn(4, 8), torch.randn(4, 8)]
    assert_matches_torch(Wrapped(torch.hypot), inputs, [MappingSpec("aten::hypot", None, info.id, written, {})], 17)


@pytest.mark.slow
def test_a_generated_dynamo_stub_is_in_fix_form_and_applies() -> None:
    stub = stub_offer("aten::hypot.default")
    info = parse_template_source(stub)
    assert "TEMPLATE" not in stub and info.exporters == ("dynamo",) and info.family == "dynamo_translation"
    assert in_current_form(stub, "dynamo") == (stub, "")
    proto = _hypot_onnx(stub.replace("op.Identity(self)", HYPOT_ONNX))
    assert "Sqrt" in {node.op_type for node in proto.graph.node} | {n.op_type for f in proto.functions for n in f.node}


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_built_in_templates_are_all_in_fix_form(exporter: str, tmp_path: Path) -> None:
    library = TemplateLibrary(user_dir=tmp_path) if exporter == "torchscript" else dynamo_library(user_dir=tmp_path)
    assert library.notes == [] and library.errors == []
    assert [info.id for info in library.all() if "TEMPLATE =" in info.source] == []
