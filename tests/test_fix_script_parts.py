"""The fix script's support package and each exporter's part are ordinary modules (issues 19, 36):
imported and run here as they run in a script, and the one writer puts them together for every
exporter, options written as Python values."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
import torch

from fixport.core.exporters.profiles import DYNAMO, PROFILES, TORCHSCRIPT, ExporterProfile
from fixport.core.fixing.fix_script import fix_script_text
from fixport.core.foundation import script as common
from fixport.core.foundation.inputs import random_inputs
from fixport.core.project.inputs import parse_input_spec
from fixport.core.project.project import FixMapping, Project
from fixport.examples.catalog import list_examples

THRESHOLD = next(e for e in list_examples() if e.name == "threshold")


def exporter_script_part(profile: ExporterProfile) -> ModuleType:
    """The exporter's fix-script part, as its profile names it."""
    return importlib.import_module(profile.fix_script_part)


torchscript_export = exporter_script_part(TORCHSCRIPT)
dynamo_export = exporter_script_part(DYNAMO)


def _settings(**changes) -> common.ScriptSettings:
    settings = common.ScriptSettings(model_path=str(THRESHOLD.path), trust=False, input_specs=[], input_file=None,
                                     seed=0, opset=None, default_opset=17, output="out.onnx", export_options={},
                                     custom_opsets={})
    return settings._replace(**changes)


def _threshold_fix(instance: str | None = None) -> common.ScriptFix:
    from fixport.core.exporters.template_compiler import compile_template_source  # as Fixport compiles it
    from fixport.symbolics.library import TemplateLibrary

    template = TemplateLibrary().get("decompose.threshold_where")
    symbolic = compile_template_source(template.source, template.default_params(), "<threshold fix>")
    return common.ScriptFix(symbolic, "aten::threshold", instance=instance, family=template.family)


def test_common_part_opens_the_model_as_fixport_does() -> None:
    specs = [parse_input_spec("x=2x3:float32")]
    settings = _settings(input_specs=specs, seed=5)
    model, inputs, model_file_settings = common.load_model(settings)
    assert not model.training and model_file_settings["opset"] == 12
    (expected,) = random_inputs(specs, 5).values()
    np.testing.assert_array_equal(inputs[0].numpy(), expected)
    assert common.input_names(model, inputs, specs) == ["x"]
    assert common.input_names(model, inputs, []) == ["x"]  # forward()'s own parameter
    assert common.resolved_opset(settings, model_file_settings) == 12
    assert common.resolved_opset(settings._replace(opset=15), model_file_settings) == 15
    assert common.resolved_opset(settings, {}) == 17


def test_common_part_carries_a_module_for_the_fixes_to_import() -> None:
    name = "fixport_carried_for_test.bridge"
    try:
        common.carry_module(name, "ANSWER = 42\n")
        from fixport_carried_for_test.bridge import ANSWER  # type: ignore[import-not-found]

        assert ANSWER == 42
    finally:
        for key in (name, "fixport_carried_for_test"):
            sys.modules.pop(key, None)


def test_torchscript_part_exports_with_a_fix_for_one_node_and_undoes_it(tmp_path: Path) -> None:
    from torch.onnx._internal.torchscript_exporter import registration

    fix, keys_seen = _threshold_fix(), []

    def kind_wide(g, *args):
        keys_seen.append(torchscript_export._instance_key(g.original_node))
        return fix.function(g, *args)

    convert = torch._C._jit_pass_onnx
    first = [common.ScriptFix(kind_wide, "aten::threshold"), common.ScriptFix(print, "aten::threshold", "no node")]
    common.export_fixed_model(torchscript_export.export_with_fixes, _settings(), first, str(tmp_path / "first.onnx"))
    (key,) = keys_seen  # the kind-wide fix, for the one node no instance fix names
    assert key.startswith("threshold|threshold.py:") and key.endswith("|aten::threshold|0")
    output = common.export_fixed_model(torchscript_export.export_with_fixes, _settings(), [_threshold_fix(key)],
                                       str(tmp_path / "fixed.onnx"))
    assert "Where" in {node.op_type for node in onnx.load(output).graph.node}
    assert torch._C._jit_pass_onnx is convert  # the keyed conversion is undone
    builtin = registration.registry.get_function_group("aten::threshold").get(12)
    assert builtin.__module__.startswith("torch.onnx"), "the fix is unregistered after the export"


def test_torchscript_part_groups_fixes_and_names_the_export_type() -> None:
    fixes = [common.ScriptFix(print, "prim::PythonOp", python_op_name="MyClip"),
             common.ScriptFix(print, "aten::threshold"), common.ScriptFix(print, "aten::selu", instance="k|0")]
    assert list(torchscript_export.fixes_by_kind(fixes)) == ["prim::PythonOp", "aten::threshold", "aten::selu"]
    options = torchscript_export.exporter_options({"operator_export_type": "ONNX_FALLTHROUGH", "input_names": ["x"]})
    assert options == {"operator_export_type": torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH, "input_names": ["x"]}


def test_dynamo_part_builds_its_translation_table_and_decompositions() -> None:
    def translate(*args):
        return args

    def replace(*args):
        return args

    fixes = [common.ScriptFix(translate, "aten::pow.Tensor_Scalar"), common.ScriptFix(translate, "aten::square"),
             common.ScriptFix(replace, "aten::square", instance="square_1"),
             common.ScriptFix(replace, "aten::threshold", family=dynamo_export.DECOMPOSITION_FAMILY)]
    table = dynamo_export.translation_table(fixes)
    assert table[torch.ops.aten.pow.Tensor_Scalar] is translate
    assert table[torch.ops.aten.square.default] not in (translate, replace)  # dispatches by FX node
    assert dynamo_export.decompositions(fixes) == {torch.ops.aten.threshold.default: replace}


TRICKY_OPTIONS = {"input_names": ["is_true"], "output_names": ["null"],
                  "dynamic_axes": {"is_true": {0: "false_batch"}, "null": {0: "true"}},
                  "do_constant_folding": False}


@pytest.mark.parametrize("exporter", list(PROFILES))
def test_options_are_written_as_python_values(exporter: str, tmp_path: Path) -> None:
    """Names holding 'true', 'null' or 'false' stay as they are (no text replacement)."""
    project = Project(model_path=str(THRESHOLD.path), export_options={"exporter": exporter, **TRICKY_OPTIONS},
                      input_specs=["is_true=1x3x10x10"])
    text = fix_script_text(project, tmp_path / "fix.py", "out.onnx")
    tree = ast.parse(text)
    written = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
               if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
               and node.targets[0].id in ("EXPORT_OPTIONS", "OPSET", "CUSTOM_OPSETS")}
    assert written == {"EXPORT_OPTIONS": TRICKY_OPTIONS, "OPSET": None, "CUSTOM_OPSETS": {}}
    assert "is_True" not in text and "'True'" not in text
    assert "def export_with_fixes" in text and "def load_model" in text


def test_writer_reads_the_parts_without_importing_torch(tmp_path: Path) -> None:
    code = ("import sys\nfrom fixport.core.fixing.fix_script import write_fix_script\n"
            "from fixport.core.project.project import Project\n"
            f"for exporter in {list(PROFILES)!r}:\n"
            f"    project = Project(model_path={str(THRESHOLD.path)!r}, export_options={{'exporter': exporter}})\n"
            f"    write_fix_script(project, {str(tmp_path)!r} + f'/{{exporter}}.py', 'out.onnx')\n"
            "assert 'torch' not in sys.modules, 'the writer imported torch'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    for exporter in PROFILES:
        compile((tmp_path / f"{exporter}.py").read_text(), f"{exporter}.py", "exec")


def test_the_writer_knows_the_settings_the_common_part_takes() -> None:
    from fixport.core.fixing.fix_script import SETTINGS_FIELDS

    assert SETTINGS_FIELDS == common.ScriptSettings._fields


def test_the_script_carries_the_foundation_with_its_checkpoints_sub_package() -> None:
    """Every module of core/foundation/, sub-packages too, under the script's name for it (a checkpoint
    folder's script imports fix_script_support.checkpoints.folder, which imports ..errors)."""
    from fixport.core.fixing.carried_source import FIXPORT_ROOT, support_sources

    carried = dict(support_sources())
    folder = FIXPORT_ROOT / "core" / "foundation"
    assert len(carried) == len(list(folder.rglob("*.py")))
    assert {"fix_script_support", "fix_script_support.script", "fix_script_support.checkpoints",
            "fix_script_support.checkpoints.folder", "fix_script_support.checkpoints.tasks"} <= set(carried)
    assert carried["fix_script_support.checkpoints.tasks"] == (folder / "checkpoints" / "tasks.py").read_text()


def test_a_fix_importing_fixport_is_carried_with_its_module(tmp_path: Path) -> None:
    source = "from fixport.core.words.vocabulary import PYTHON_OP_KIND\n\ndef symbolic(g, x):\n    return x\n"
    project = Project(model_path=str(THRESHOLD.path), mappings=[FixMapping("aten::relu", "user.relu", source)])
    text = fix_script_text(project, tmp_path / "fix.py", "out.onnx")
    assert "carry_module('fixport.core.words.vocabulary'" in text
    assert "ScriptFix(fix_1, 'aten::relu', instance=None" in text


def test_the_profile_says_which_op_a_fix_is_registered_for() -> None:
    """A dynamo decomposition replaces the op it names; every other fix, and every TorchScript fix, is
    registered for the op it was fitted to (the fix script asks the profile, not the exporter's name)."""
    from fixport.core.exporters.profiles import DYNAMO, TORCHSCRIPT
    from fixport.core.words.vocabulary import DYNAMO_DECOMPOSITION_FAMILY

    assert DYNAMO.registered_kind(DYNAMO_DECOMPOSITION_FAMILY, "prims::lgamma", "aten::lgamma") == "aten::lgamma"
    assert DYNAMO.registered_kind("dynamo_translation", "prims::lgamma", "aten::lgamma") == "prims::lgamma"
    assert TORCHSCRIPT.registered_kind(DYNAMO_DECOMPOSITION_FAMILY, "aten::x", "aten::y") == "aten::x"
    assert TORCHSCRIPT.warns_of_baked_values and not DYNAMO.warns_of_baked_values
