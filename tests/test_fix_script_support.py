"""The fix script carries a small support package whole (issue 36): it imports no Fixport, its own
lines use only public names, it runs alone in a new process and reproduces Fixport's fixed export,
and renaming an engine function leaves it as it was. Where the support (or an exporter's part)
repeats what the engine does, both run here on the same models and inputs and must agree."""
from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from fixport.core.exporters.profiles import DYNAMO, PROFILES, TORCHSCRIPT
from fixport.core.fixing.carried_source import SCRIPT_SUPPORT, module_path, support_sources
from fixport.core.fixing.fix_script import fix_script_text
from fixport.core.model.inputs import parse_input_spec
from fixport.core.model.project import FixMapping, Project, save_project
from fixport.core.script_support import bfloat16, checks, input_sets, inputs
from fixport.examples.catalog import list_examples
from tests.conftest import REPO, slow_but_one
from tests.test_fix_end_to_end import _assert_same_model
from tests.test_fix_script_parts import exporter_script_part

THRESHOLD = next(e for e in list_examples() if e.name == "threshold")
SQUARES = """
import torch


class Squares(torch.nn.Module):
    def forward(self, x):
        return x.pow(2) + (x * 1.5).pow(2)


def build():
    torch.manual_seed(0)
    return Squares().eval(), (torch.rand(2, 3),)
"""
# A fix as people write one for the dynamo exporter (an onnxscript function; it imports no Fixport).
SQUARE_AS_MUL = """
from onnxscript.onnx_opset import opset18 as op

TEMPLATE = {
    "id": "user.square_as_mul",
    "title": "x ** 2 as x * x",
    "description": "A square as one Mul.",
    "family": "dynamo_translation",
    "fits": ["aten::pow.Tensor_Scalar"],
    "min_opset": 15,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
}


def symbolic(self, exponent: float):
    return op.Mul(self, self)
"""
# Engine functions the script used to copy by name (issue 36): renamed in a copy of Fixport below.
ENGINE_PRIVATE_NAMES = ("_key_name", "_by_instance", "_accepts_kwargs", "_shapes_by_parameter", "_snapshot",
                        "_refuse_missing_required", "_widen_nodes")


def _project(exporter: str, model: Path | None = None) -> Project:
    """One small model per exporter with a fix its part must register: TorchScript's threshold fix
    for every node, a user's pow fix for one FX node (the other keeps torch_lib's own)."""
    if exporter == TORCHSCRIPT.name:
        template = PROFILES[exporter].template_library().get("decompose.threshold_where")
        mapping = FixMapping("aten::threshold", template.id, template.source, template.default_params())
        return Project(model_path=str(THRESHOLD.path), export_options={"exporter": exporter}, mappings=[mapping])
    mapping = FixMapping("aten::pow.Tensor_Scalar", "user.square_as_mul", SQUARE_AS_MUL, instance="pow_1")
    return Project(model_path=str(model), export_options={"exporter": exporter}, mappings=[mapping])


def _embedded(tree: ast.Module) -> dict[str, str]:
    """The modules written into the script: EMBEDDED.add(name, source)."""
    return {node.args[0].value: node.args[1].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add"
            and len(node.args) == 2 and all(isinstance(arg, ast.Constant) for arg in node.args)}


def _engine_private_names() -> set[str]:
    """Private top-level names the engine defines (the support package and the parts left out)."""
    names: set[str] = set()
    for folder in ("core", "symbolics"):
        for path in (REPO / folder).rglob("*.py"):
            if "script_support" in path.parts or path.name == "script_part.py":
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith("_"):
                    names.add(node.name)
    return names - {"__getattr__"}


@pytest.mark.parametrize("exporter", list(PROFILES))
def test_the_script_imports_no_fixport_and_uses_only_public_names(exporter: str, model_file, tmp_path: Path) -> None:
    project = _project(exporter, model_file("squares.py", SQUARES))
    text = fix_script_text(project, tmp_path / "fix.py", "out.onnx")
    tree = ast.parse(text)
    modules = _embedded(tree)
    assert dict(support_sources()).items() <= modules.items()  # each support module whole, as it is in Fixport
    part = module_path(PROFILES[exporter].fix_script_part).read_text(encoding="utf-8")
    assert modules[f"{SCRIPT_SUPPORT}.exporter_part"] == part.replace("fixport.core.script_support", SCRIPT_SUPPORT)
    assert set(modules) == {*dict(support_sources()), f"{SCRIPT_SUPPORT}.exporter_part"}

    for source in (text, *modules.values()):
        for node in ast.walk(ast.parse(source)):
            imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                        else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not [name for name in imported if name.split(".")[0] == "fixport"], imported
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(SCRIPT_SUPPORT)):
                private = [alias.name for alias in node.names if alias.name.startswith("_")]
                assert not private, f"{private} taken from {node.module} across modules"

    # the script's own lines: the modules' text and the fixes' code (the project's templates) left out
    statements = [node for node in tree.body
                  if not (isinstance(node, ast.FunctionDef) and node.name.startswith("make_fix_"))]
    own = [node for statement in statements for node in ast.walk(statement) if not isinstance(node, ast.Constant)]
    own_names = {node.id for node in own if isinstance(node, ast.Name)}
    own_names |= {node.attr for node in own if isinstance(node, ast.Attribute)}
    own_names |= {node.name for node in own if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not own_names & _engine_private_names()
    assert not [name for name in own_names if name.startswith("_") and not name.startswith("__")]


@pytest.mark.subprocess
@pytest.mark.parametrize("exporter", slow_but_one(list(PROFILES), TORCHSCRIPT.name))  # each about 20 s
def test_the_script_runs_alone_and_reproduces_fixports_export(exporter: str, cli, model_file, tmp_path: Path
                                                              ) -> None:
    """`python script.py` where importing fixport fails, against `fixport export --project`."""
    project = _project(exporter, model_file("squares.py", SQUARES))
    project_path = tmp_path / "p.fixport.json"
    save_project(project, project_path)
    fixport_onnx, script, script_onnx = tmp_path / "fixport.onnx", tmp_path / "fix_export.py", tmp_path / "script.onnx"
    exported = cli("export", project.model_path, "--project", str(project_path), "-o", str(fixport_onnx))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert cli("script", str(project_path), "-o", str(script)).returncode == 0

    blocked = tmp_path / "no_fixport" / "fixport"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('the fix script imported Fixport')\n")
    env = {**os.environ, "PYTHONPATH": str(blocked.parent)}
    ran = subprocess.run([sys.executable, str(script), "-o", str(script_onnx)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert "checked at" in ran.stdout and "MISMATCH" not in ran.stdout
    _assert_same_model(onnx.load(str(fixport_onnx)), onnx.load(str(script_onnx)))
    ops = [node.op_type for node in onnx.load(str(script_onnx)).graph.node]
    assert "Where" in ops if exporter == TORCHSCRIPT.name else "Mul" in ops and "Pow" in ops  # one pow fixed


def test_renaming_an_engine_private_function_leaves_the_script_unchanged(model_file, tmp_path: Path) -> None:
    """A copy of Fixport with engine functions the script once carried renamed writes the same scripts."""
    copy = tmp_path / "pkgs" / "fixport"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "docs", "bench", "tests",
                                                               "*.onnx", "build", "*.egg-info"))
    renamed = 0
    for path in copy.rglob("*.py"):
        if "script_support" in path.parts or path.name == "script_part.py":
            continue
        text = path.read_text(encoding="utf-8")
        changed = re.sub(rf"\b({'|'.join(ENGINE_PRIVATE_NAMES)})\b", r"\1_renamed", text)
        if changed != text:
            path.write_text(changed, encoding="utf-8")
            renamed += 1
    assert renamed >= len(ENGINE_PRIVATE_NAMES)
    squares = model_file("squares.py", SQUARES)
    code = textwrap.dedent(f"""
        import sys
        from fixport.core.fixing.fix_script import fix_script_text
        from fixport.core.model.project import load_project
        assert sys.modules['fixport'].__file__.startswith({str(copy)!r})
        for exporter in {list(PROFILES)!r}:
            project = load_project({str(tmp_path)!r} + f'/{{exporter}}.fixport.json')
            text = fix_script_text(project, {str(tmp_path)!r} + '/fix.py', 'out.onnx')
            open({str(tmp_path)!r} + f'/{{exporter}}_renamed.py', 'w').write(text)
    """)
    expected = {}
    for exporter in PROFILES:
        project = _project(exporter, squares)
        save_project(project, tmp_path / f"{exporter}.fixport.json")
        expected[exporter] = fix_script_text(project, tmp_path / "fix.py", "out.onnx")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(copy.parent)})
    for exporter in PROFILES:
        assert (tmp_path / f"{exporter}_renamed.py").read_text() == expected[exporter]


# ---- the support and the engine on the same inputs ----

def test_random_inputs_and_input_structure_agree_with_the_engine() -> None:
    from fixport.core.loaders import input_structure, input_tensors

    specs = [parse_input_spec(text) for text in ("x=2x3", "mask=2x3:bool", "ids=4:int64", "h=2x2:float16")]
    ours, theirs = input_tensors.random_inputs(specs, 3), inputs.random_inputs(specs, 3)
    assert list(ours) == list(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours)

    class Nested(torch.nn.Module):
        def forward(self, x, state=None, scale=1.0, extra=None):
            return {"sum": x + state["h"] * scale, "pair": (x, extra["y"])}

    x, h, y = torch.rand(2, 3), torch.rand(2, 3), torch.rand(3)
    given = [Nested(), x, {"state": {"h": h}, "scale": 2.0, "extra": {"y": y}}]
    engine = input_structure.flat_model(given[0], *input_structure.split_inputs(given[1:]), "nested.py")
    support = inputs.flat_model(given[0], *inputs.split_inputs(given[1:]), "nested.py")
    assert engine[0].structure.names == support[0].structure.names
    assert all(torch.equal(a, b) for a, b in zip(engine[1], support[1], strict=True))
    assert input_structure.keyed_output_names(engine[0], engine[1]) == inputs.keyed_output_names(support[0],
                                                                                                support[1])
    assert input_structure.positional_names(Nested(), 2) == inputs.positional_names(Nested(), 2)


def test_input_sets_agree_with_the_engine() -> None:
    from fixport.core.loaders import input_sets as engine

    class Add(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    given = [[(torch.rand(2, 5), torch.rand(2, 5)), (torch.rand(3, 7), torch.rand(3, 7))]]
    assert engine.several_input_sets(given) is not None
    assert str(engine.several_input_sets(given)) == str(input_sets.several_input_sets(given))
    ours = engine.flat_input_sets(Add(), engine.several_input_sets(given), "add.py")
    theirs = input_sets.flat_input_sets(Add(), input_sets.several_input_sets(given), "add.py")
    assert [t.shape for t in ours[1]] == [t.shape for t in theirs[1]] and ours[2] == theirs[2]
    assert [[t.shape for t in s] for s in ours[3]] == [[t.shape for t in s] for s in theirs[3]]
    proposed = engine.proposed_dynamic_axes(["x", "y"], [ours[1], *ours[3]])
    assert proposed == input_sets.proposed_dynamic_axes(["x", "y"], [theirs[1], *theirs[3]]) and proposed
    for declared in (None, proposed, {"x": {0: "n"}}):
        assert engine.dims_inferred_from_sets(declared, proposed) == input_sets.dims_inferred_from_sets(declared,
                                                                                                        proposed)


def test_the_comparison_rules_agree_with_the_engine() -> None:
    from fixport.core.checks import low_precision, shape_check
    from fixport.core.model import output_stats, tolerances, traced_sizes

    assert checks.DEFAULT_TOLERANCES == tolerances.DEFAULT_TOLERANCES
    assert checks.FALLBACK_DTYPE == tolerances.FALLBACK_DTYPE
    example = (torch.rand(2, 8, 5), torch.rand(2, 5))
    axes = {"x": {0: "batch", 1: "length"}, "y": {0: "batch"}}
    dims = traced_sizes.declared_dims(axes, ["x", "y"], [tuple(t.shape) for t in example])
    assert dims == checks.declared_dims(axes, ["x", "y"], [tuple(t.shape) for t in example])
    ours, theirs = shape_check.other_size_inputs(dims, example), checks.other_size_inputs(dims, example)
    assert [label for label, _ in ours] == [label for label, _ in theirs]
    assert all(torch.equal(a, b) for (_, xs), (_, ys) in zip(ours, theirs) for a, b in zip(xs, ys, strict=True))

    value = {"a": torch.rand(3, 4), "b": [torch.rand(2, dtype=torch.complex64), torch.tensor(3)]}
    flat = output_stats.flatten_outputs(value)
    assert [(n, v.dtype) for n, v in flat] == [(n, v.dtype) for n, v in checks.flatten_outputs(value)]
    reference, candidate = flat[0][1], flat[0][1] + np.float32(2e-3)
    ours_metrics = output_stats.difference_metrics(reference, candidate, 1e-3, 1e-5)
    theirs_metrics = checks.difference_metrics(reference, candidate, 1e-3, 1e-5)
    assert list(ours_metrics) == list(theirs_metrics)
    assert all(np.array_equal(ours_metrics[key], theirs_metrics[key]) for key in ours_metrics)
    real = np.stack([flat[1][1].real, flat[1][1].imag], axis=-1)
    assert np.array_equal(output_stats.as_real_layout(flat[1][1], real), checks.as_real_layout(flat[1][1], real))

    model, half_inputs = torch.nn.Linear(8, 4).half().eval(), (torch.rand(3, 8).half(),)
    exact = low_precision.float32_outputs(model, half_inputs)
    assert [(n, v.tolist()) for n, v in exact] == [(n, v.tolist()) for n, v in checks.float32_outputs(model,
                                                                                                       half_inputs)]
    torch_value = model(*half_inputs).detach().numpy()
    for onnx_value in (exact[0][1].astype(np.float16), torch_value + np.float16(0.5)):
        assert (low_precision.within_rounding(torch_value, onnx_value, exact[0][1], 1e-3)
                == checks.within_rounding(torch_value, onnx_value, exact[0][1], 1e-3))


def test_bfloat16_runs_agree_with_the_engine() -> None:
    from fixport.core.onnx_io import bfloat16_runs

    helper = onnx.helper
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=onnx.TensorProto.BFLOAT16),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Cast", ["r"], ["y"], to=onnx.TensorProto.FLOAT)], "bf16",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert bfloat16_runs.has_bfloat16(model) and bfloat16.has_bfloat16(model)
    assert bfloat16_runs.bfloat16_values(model) == bfloat16.bfloat16_values(model)
    ours, theirs = onnx.ModelProto(), onnx.ModelProto()
    ours.CopyFrom(model)
    theirs.CopyFrom(model)
    bfloat16_runs.widen_in_place(ours)
    bfloat16.widen_in_place(theirs)
    assert ours.SerializeToString() == theirs.SerializeToString()


def test_the_exporter_parts_agree_with_the_engine() -> None:
    from fixport.core.exporters import given_inputs
    from fixport.core.exporters.dynamo import exporter as dynamo
    from fixport.core.exporters.dynamo import module_attributes
    from fixport.core.exporters.torchscript import source_graph as torchscript_graph
    from fixport.core.model.capture_settings import CORE_ATEN, NO_GRAD, STRICT
    from fixport.core.model.vocabulary import DYNAMO_DECOMPOSITION_FAMILY, PYTHON_OP_KIND

    torchscript_part, dynamo_part = exporter_script_part(TORCHSCRIPT), exporter_script_part(DYNAMO)
    assert torchscript_part.PYTHON_OP_KIND == PYTHON_OP_KIND
    assert dynamo_part.DECOMPOSITION_FAMILY == DYNAMO_DECOMPOSITION_FAMILY
    assert (dynamo_part.NO_GRAD, dynamo_part.STRICT, dynamo_part.CORE_ATEN) == (NO_GRAD, STRICT, CORE_ATEN)

    class Blocks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
            self.cache = []

        def forward(self, x, y=None, *past, scale=2.0):
            self.cache.append(x)
            return torch.relu(self.body(x)).relu() * scale

    model, x = Blocks().eval(), torch.rand(2, 4)
    graph = torch.jit.trace(model, (x,)).inlined_graph
    ours = torchscript_graph.instance_keys(torchscript_graph.all_nodes(graph))
    assert list(ours.values()) == list(torchscript_part.instance_keys(torchscript_part.all_nodes(graph)).values())

    for count in (1, 2):
        with given_inputs.given_inputs_only(model, count):
            engine_signature = str(inspect.signature(model.forward))
        with torchscript_part.given_inputs_only(model, count):
            assert str(inspect.signature(model.forward)) == engine_signature

    args, per_input = (x, x, x, x), [{0: "batch"}, None, {0: "batch"}, None]
    assert dynamo_part.shapes_by_parameter(model, args, per_input) == dynamo._shapes_by_parameter(model, args,
                                                                                                   per_input)
    model.cache = []  # the trace above ran forward()
    for kept in (module_attributes.attributes_kept, dynamo_part.attributes_kept):
        with kept(model):
            model(x)
            model.added = 1
        assert model.cache == [] and not hasattr(model, "added")


@pytest.mark.slow  # two transformers checkpoints opened twice each (about 20 s)
def test_checkpoint_folders_open_as_the_engine_opens_them(tmp_path: Path) -> None:
    import transformers

    from fixport.core.loaders.checkpoint_folder import load_checkpoint_folder
    from fixport.core.model.inputs import InputOptions
    from fixport.core.script_support import checkpoints

    torch.manual_seed(0)
    transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64)).save_pretrained(tmp_path / "llama")
    transformers.BertModel(transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
        max_position_embeddings=64)).save_pretrained(tmp_path / "bert")
    for folder, component in (("llama", None), ("llama", "decode"), ("bert", None)):
        engine = load_checkpoint_folder(tmp_path / folder, InputOptions(), None, component)
        support = checkpoints.load_checkpoint_folder(tmp_path / folder, InputOptions(), None, component)
        assert [t.shape for t in engine[1]] == [t.shape for t in support[1]]
        assert all(torch.equal(a, b) for a, b in zip(engine[1], support[1], strict=True))
        assert engine[2] == support[2] and engine[3] == support[3], (folder, component)
        with torch.no_grad():
            ours, theirs = engine[0](*engine[1]), support[0](*support[1])
        assert [n for n, _ in checks.flatten_outputs(ours)] == [n for n, _ in checks.flatten_outputs(theirs)]
