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

import onnx
import pytest
import torch

from fixport.core.exporters.profiles import DYNAMO, PROFILES, TORCHSCRIPT
from fixport.core.fixing.carried_source import SCRIPT_SUPPORT, module_path, support_sources
from fixport.core.fixing.fix_script import fix_script_text
from fixport.core.project.project import FixMapping, Project, save_project
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
# Private engine functions beside the code the script carries (issue 36): renamed in a copy of Fixport below.
ENGINE_PRIVATE_NAMES = ("_given_shape_set", "_static_symbolic", "_make_kind_dispatcher", "_dynamic_shapes_by_name",
                        "_attribute_value", "_refuse_missing_required", "_with_widened_weights")


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
            if "foundation" in path.parts or path.name == "script_part.py":
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
    assert modules[f"{SCRIPT_SUPPORT}.exporter_part"] == part.replace("fixport.core.foundation", SCRIPT_SUPPORT)
    assert set(modules) == {*dict(support_sources()), f"{SCRIPT_SUPPORT}.exporter_part"}

    # the script's own lines: the modules' text and the fixes' code (the project's templates, which
    # may import the template API the script carries for them) left out
    statements = [node for node in tree.body
                  if not (isinstance(node, ast.FunctionDef) and node.name.startswith("make_fix_"))]
    for root in (ast.Module(body=statements, type_ignores=[]), *map(ast.parse, modules.values())):
        for node in ast.walk(root):
            imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                        else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not [name for name in imported if name.split(".")[0] == "fixport"], imported
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(SCRIPT_SUPPORT)):
                private = [alias.name for alias in node.names if alias.name.startswith("_")]
                assert not private, f"{private} taken from {node.module} across modules"

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
        if "foundation" in path.parts or path.name == "script_part.py":
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
        from fixport.core.project.project import load_project
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

def test_the_engine_runs_the_supports_code_not_a_copy() -> None:
    """What the fix script carries lives once, in the foundation (issue 36): no engine module defines
    a function or class of the foundation's name, and the engine imports the foundation's own names
    from it (tests/test_architecture.py: one import path per name), so the script and Fixport cannot
    drift apart."""
    import ast

    from fixport.core.foundation import scopes
    from fixport.core.words import vocabulary
    from tests.conftest import REPO

    def top_level(path: Path) -> set[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name[0] != "_"}

    foundation = set().union(*(top_level(p) for p in (REPO / "core" / "foundation").glob("*.py")))
    # Same name, other job: the command line's entry point, the CLI's export step, the engine's
    # loader (it returns a LoadedModel) and the project's input spec (the script's is a namedtuple).
    other_jobs = {"main", "run_export", "load_model", "InputSpec"}
    copies = sorted(f"{path.relative_to(REPO)}: {name}" for folder in ("core", "cli")
                    for path in (REPO / folder).rglob("*.py") if "foundation" not in path.parts
                    for name in top_level(path) & foundation - other_jobs)
    assert copies == []
    assert vocabulary.scope_from_torchscript is scopes.module_scope


def test_the_supports_errors_are_the_engines_across_the_worker() -> None:
    """A missing input the foundation reports is caught as its InputSpecError and FixportError, the
    engine's errors are FixportErrors too, and it crosses the worker's pipe (pickle) as the same class."""
    import pickle

    from fixport.core.foundation import errors as support
    from fixport.core.words import errors as engine

    raised = support.MissingInputsError("No example inputs for ids.", "Pass --input ids=1x8:int64.")
    assert isinstance(raised, support.InputSpecError) and isinstance(raised, support.FixportError)
    back = pickle.loads(pickle.dumps(raised))
    assert type(back) is support.MissingInputsError and back.hint == raised.hint
    assert back.user_text() == "No example inputs for ids.\n  → Pass --input ids=1x8:int64."
    assert issubclass(engine.TraceError, support.FixportError)


def test_the_exporter_parts_agree_with_the_engine() -> None:
    """What each part still writes again (the names Fixport saves, the instance keys) matches the
    engine; what it shares (a signature cut to the given inputs, dynamic shapes by parameter, the
    attributes kept) is the one implementation both run, checked here on its own."""
    from fixport.core.exporters.dynamo import exporter as dynamo_exporter
    from fixport.core.exporters.dynamo import fixes as dynamo_fixes
    from fixport.core.exporters.dynamo import script_part as dynamo_shared
    from fixport.core.exporters.torchscript import exporter as torchscript_exporter
    from fixport.core.exporters.torchscript import function_symbolics
    from fixport.core.exporters.torchscript import script_part as torchscript_shared
    from fixport.core.exporters.torchscript import source_graph as torchscript_graph
    from fixport.core.project.capture_settings import CORE_ATEN, NO_GRAD, STRICT
    from fixport.core.words.vocabulary import DYNAMO_DECOMPOSITION_FAMILY, PYTHON_OP_KIND

    torchscript_part, dynamo_part = exporter_script_part(TORCHSCRIPT), exporter_script_part(DYNAMO)
    assert torchscript_part.PYTHON_OP_KIND == PYTHON_OP_KIND
    assert dynamo_part.DECOMPOSITION_FAMILY == DYNAMO_DECOMPOSITION_FAMILY
    assert (dynamo_part.NO_GRAD, dynamo_part.STRICT, dynamo_part.CORE_ATEN) == (NO_GRAD, STRICT, CORE_ATEN)
    shared = [(torchscript_exporter.given_inputs_only, torchscript_shared.given_inputs_only),
              (function_symbolics.autograd_functions_named, torchscript_shared.autograd_functions_named),
              (torchscript_graph.all_nodes, torchscript_shared.all_nodes),
              (dynamo_exporter.shapes_by_parameter, dynamo_shared.shapes_by_parameter),
              (dynamo_exporter.attributes_kept, dynamo_shared.attributes_kept),
              (dynamo_fixes.by_instance, dynamo_shared.by_instance)]
    assert [engine for engine, part in shared if engine is not part] == []

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

    for count, signature in ((1, "(x)"), (2, "(x, y=None)")):
        with torchscript_shared.given_inputs_only(model, count):
            assert str(inspect.signature(model.forward)) == signature
    assert str(inspect.signature(model.forward)) == "(x, y=None, *past, scale=2.0)"

    args, per_input = (x, x, x, x), [{0: "batch"}, None, {0: "batch"}, None]
    assert dynamo_shared.shapes_by_parameter(model, args, per_input) == ({0: "batch"}, None, ({0: "batch"}, {}))
    model.cache = []  # the trace above ran forward()
    with dynamo_shared.attributes_kept(model):
        model(x)
        model.added = 1
    assert model.cache == [] and not hasattr(model, "added")


