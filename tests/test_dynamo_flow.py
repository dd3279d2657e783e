"""The whole dynamo flow on the dynamo examples: check, fix --auto, export, compare and the fix script.

Real torch.onnx.export(dynamo=True) steps in the worker, real ONNX Runtime sessions, the real
command line; the generated script runs in a fresh Python without Fixport.
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.project.project import FixMapping, Project, load_project, save_project
from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest, CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path, list_examples
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.dynamo.offers import stub_offer, torchlib_offer
from fixport.symbolics.library import parse_template_source
from tests.conftest import slow_but_one

DYNAMO = {"exporter": "dynamo"}
DYNAMO_EXAMPLES = [e for e in list_examples() if e.expected_unsupported_dynamo]
# What `fix --auto --exporter dynamo` chooses for each failing example (a capture failure: its lines
# changed for the capture, issue 46).
EXPECTED_FIXES = {
    "branch_on_value_dynamo": {"torch.export::data_dependent_error": "dynamo.capture_code_change"},
    "custom_ops_dynamo": {"mydyn::softclip.default": "dynamo.inline_implementation",
                          "mydyn::gate.default": "dynamo.inline_implementation"},
    "int16_square_dynamo": {"aten::pow.Tensor_Scalar": "onnx_function.pow_as_mul"},
    "median_pooling_dynamo": {"aten::median.dim": "onnx_function.median_dim_topk"},
    "nan_gap_max_dynamo": {"aten::amax.default": "onnx_function.amax_nan_propagating"},
}


def test_five_dynamo_examples_fail_for_different_reasons() -> None:
    assert {e.name for e in DYNAMO_EXAMPLES} == set(EXPECTED_FIXES)
    reasons = {entry["reason"] for e in DYNAMO_EXAMPLES for entry in e.expected_unsupported_dynamo or []}
    assert reasons == {"capture_failed", "no_onnx_function", "runtime_error", "mismatch"}


@pytest.mark.parametrize("example", slow_but_one(DYNAMO_EXAMPLES, "branch_on_value_dynamo", lambda e: e.name))
def test_fix_auto_chooses_by_running(worker, example, tmp_path: Path) -> None:
    output = tmp_path / "fixed.onnx"
    result = worker.run(AutoFixRequest(ModelRequest(str(example.path)), dict(DYNAMO), output=str(output)))
    assert {c.kind: c.template_id for c in result.choices} == EXPECTED_FIXES[example.name]
    assert result.after.unsupported == [] and result.after.saved_files == [str(output)]
    assert result.after.options.exporter == "dynamo"
    assert any(c.max_abs is not None and c.max_abs <= example.fix_tolerance for c in result.choices)


@pytest.mark.slow
def test_cli_fix_export_compare_and_script_on_custom_ops(cli, tmp_path: Path) -> None:
    model = str(example_path("custom_ops_dynamo"))
    project = tmp_path / "custom.fixport.json"
    fixed = cli("fix", model, "--exporter", "dynamo", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "inlined_implementation" in fixed.stdout
    assert load_project(project).export_options["exporter"] == "dynamo"

    onnx_path = tmp_path / "custom.onnx"
    exported = cli("export", model, "--exporter", "dynamo", "--project", str(project), "-o", str(onnx_path))
    assert exported.returncode == 0 and onnx_path.exists(), exported.stdout + exported.stderr

    compared = cli("compare", model, "--exporter", "dynamo", "--project", str(project), "--json")
    assert compared.returncode == 0, compared.stderr
    report = json.loads(compared.stdout)
    assert report["pass"] and all(output["pass"] for output in report["outputs"])

    script = tmp_path / "fix_export.py"
    written = cli("script", str(project), "-o", str(script))
    assert written.returncode == 0, written.stderr
    assert "custom_translation_table" in script.read_text() and "run_decompositions" in script.read_text()
    _run_script_and_match_torch(script, tmp_path / "from_script.onnx", "custom_ops_dynamo")


def _run_script_and_match_torch(script: Path, output: Path, example: str) -> None:
    """The script runs without Fixport on the path and writes a model that matches torch."""
    completed = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=script.parent,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    module, inputs = importlib.import_module(f"fixport.examples.{example}").build()
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    (actual,) = session.run(None, feeds)
    with torch.no_grad():
        expected = module(*inputs).numpy()
    np.testing.assert_allclose(actual, expected, atol=1e-5, equal_nan=True)


@pytest.mark.slow
def test_script_of_a_translation_fix_reproduces_the_export(cli, tmp_path: Path) -> None:
    project = tmp_path / "square.fixport.json"
    assert cli("fix", str(example_path("int16_square_dynamo")), "--exporter", "dynamo", "--auto",
               "-o", str(project)).returncode == 0
    script = tmp_path / "square_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    _run_script_and_match_torch(script, tmp_path / "square.onnx", "int16_square_dynamo")


def test_compare_names_the_first_divergent_fx_node(worker) -> None:
    """Unfixed, the NaN-gap model runs but differs: the per-node comparison blames amax, an FX node."""
    result = worker.run(CompareRequest(ModelRequest(str(example_path("nan_gap_max_dynamo"))), dict(DYNAMO)))
    assert not all(output.passed for output in result.outputs)
    first = result.node_analysis.first_divergent
    assert first is not None and first.source_node == "amax" and first.onnx_kind == "onnx::ReduceMax"
    assert first.source.startswith("nan_gap_max_dynamo.py:")
    assert any("node metadata" in message for message in result.messages)


def test_placeholder_onnx_graph_while_ops_have_no_function(worker) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("custom_ops_dynamo"))), options=DYNAMO))
    placeholders = [n for n in result.onnx_graph.nodes if n.unsupported]
    assert [n.op_type for n in placeholders] == ["Unsupported", "Unsupported"]
    assert {n.origin[0] for n in placeholders} == {p.instance for p in result.unsupported}
    assert any(n.op_type == "Conv" for n in result.onnx_graph.nodes)  # the rest of the model is drawn


@pytest.mark.slow
def test_check_prints_the_opset_the_model_really_has(cli) -> None:
    checked = cli("check", str(example_path("resnet18_clean")), "--exporter", "dynamo", "--opset", "17")
    assert checked.returncode == 0, checked.stderr
    assert "opset 18," in checked.stdout and "wrote opset 18" in checked.stdout


TWO_SQUARES = """
        import torch

        class TwoSquares(torch.nn.Module):
            def forward(self, x):
                small = torch.round(x * 10).to(torch.int16)
                return torch.square(small).float() + torch.square(x)

        def build():
            return TwoSquares(), (torch.rand(2, 4),)
    """


def _one_node_fix(worker, path: Path) -> tuple[FixMapping, str]:
    before = worker.run(AnalyzeRequest(ModelRequest(str(path)), options=DYNAMO))
    (problem,) = before.unsupported
    template = dynamo_library().get("onnx_function.pow_as_mul")
    return FixMapping(problem.kind, template.id, template.source, template.default_params(),
                      instance=problem.instance), problem.instance


@pytest.mark.slow  # fix_auto_chooses_by_running keeps a dynamo fix in the fast tier
def test_a_fix_for_one_node_leaves_the_others_to_torch_lib(worker, model_file) -> None:
    path = model_file("two_squares.py", TWO_SQUARES)
    before = worker.run(AnalyzeRequest(ModelRequest(str(path)), options=DYNAMO))
    (problem,) = before.unsupported
    template = dynamo_library().get("onnx_function.pow_as_mul")
    one_node = FixMapping(problem.kind, template.id, template.source, template.default_params(),
                          instance=problem.instance)
    after = worker.run(AnalyzeRequest(ModelRequest(str(path)), options=DYNAMO, mappings=[one_node]))
    assert after.unsupported == []
    pows = [n for n in after.onnx_graph.nodes if n.op_type == "Pow"]
    assert len(pows) == 1 and pows[0].origin[0] != problem.instance  # the float square kept torch_lib's Pow


@pytest.mark.slow
def test_generated_offers_are_templates_that_apply(worker) -> None:
    import fixport.examples.custom_ops_dynamo  # noqa: F401 - registers mydyn:: ops in this process

    offers = {"torchlib": torchlib_offer("aten::pow.Tensor_Scalar"), "stub": stub_offer("mydyn::gate.default")}
    for source in offers.values():
        assert source is not None and parse_template_source(source).family == "dynamo_translation"
    assert "def symbolic(x)" in offers["stub"] and "Schema: ``mydyn::gate(Tensor x) -> Tensor``" in offers["stub"]
    softclip = dynamo_library().get("dynamo.inline_implementation")
    mappings = [FixMapping("mydyn::gate.default", "dynamo.stub", offers["stub"]),
                FixMapping("mydyn::softclip.default", softclip.id, softclip.source,
                           {"kind": "mydyn::softclip.default"})]
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("custom_ops_dynamo"))), options=DYNAMO,
                                       mappings=mappings))
    assert [p.reason for p in result.unsupported] == ["mismatch"]  # the stub's Identity exports and runs


def test_a_broken_fix_is_a_clear_error_not_a_traceback(cli, tmp_path: Path) -> None:
    project = tmp_path / "broken.fixport.json"
    project.write_text(json.dumps({
        "format_version": 3, "app": "fixport", "model_path": str(example_path("int16_square_dynamo")),
        "export_options": DYNAMO, "mappings": [{"target_kind": "aten::pow.Tensor_Scalar", "template_id": "mine",
                                                "source": "TEMPLATE = {}\ndef symbolic(self, e:\n"}]}))
    completed = cli("export", str(example_path("int16_square_dynamo")), "--exporter", "dynamo",
                    "--project", str(project), "-o", str(tmp_path / "x.onnx"))
    assert completed.returncode == 2 and "Traceback" not in completed.stderr
    assert "mine" in completed.stderr and "line 2" in completed.stderr


def test_templates_ranks_dynamo_templates_for_an_op_overload(cli) -> None:
    listed = cli("templates", "--op", "aten::pow.Tensor_Scalar", "--opset", "17", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["templates"]
    assert rows[0]["id"] == "onnx_function.pow_as_mul" and rows[0]["tier"] == 0  # ranked at torch_lib's opset 18
    every = json.loads(cli("templates", "--exporter", "dynamo", "--json").stdout)["templates"]
    # the dynamo templates, and the hand-written fixes written once for both exporters
    assert {r["family"] for r in every} == {"dynamo_translation", "dynamo_decomposition", "onnx_function",
                                            "standard", "decompose", "torchvision"}


def test_inspector_gets_the_schema_of_an_fx_op_overload(worker) -> None:
    from fixport.core.records.requests import OpInfoRequest

    info = worker.run(OpInfoRequest("aten::median.dim"))
    schema = "aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
    assert info.schemas == [schema]


@pytest.mark.slow
def test_script_of_a_fix_for_one_node(cli, worker, model_file, tmp_path: Path) -> None:
    path = model_file("two_squares.py", TWO_SQUARES)
    mapping, instance = _one_node_fix(worker, path)
    project = Project(model_path=str(path), export_options=dict(DYNAMO), mappings=[mapping])
    save_project(project, tmp_path / "two.fixport.json")
    script = tmp_path / "two_export.py"
    assert cli("script", str(tmp_path / "two.fixport.json"), "-o", str(script)).returncode == 0
    assert f"instance={instance!r}" in script.read_text()  # in the FIXES table, as ScriptFix(fix_1, ...)
    output = tmp_path / "two.onnx"
    completed = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    x = torch.rand(2, 4)
    (actual,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    expected = torch.square(torch.round(x * 10).to(torch.int16)).float() + torch.square(x)
    np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-6)


def test_a_custom_domain_node_for_a_backend_plugin(worker) -> None:
    """The custom-domain template writes the op as one node of its own domain; ONNX Runtime (without
    the plugin) says it has no kernel for it, naming the FX node it came from."""
    library = dynamo_library()
    custom, inline = library.get("dynamo.custom_domain_node"), library.get("dynamo.inline_implementation")
    mappings = [FixMapping("mydyn::gate.default", custom.id, custom.source,
                           {**custom.default_params(), "domain": "mydyn", "op_name": "Gate"}),
                FixMapping("mydyn::softclip.default", inline.id, inline.source, {"kind": "mydyn::softclip.default"})]
    result = worker.run(AnalyzeRequest(ModelRequest(str(example_path("custom_ops_dynamo"))), options=DYNAMO,
                                       mappings=mappings))
    (problem,) = result.unsupported
    assert problem.reason == "runtime_error" and "domain 'mydyn' op 'Gate'" in problem.message
    gate = next(n for n in result.onnx_graph.nodes if n.kind == "mydyn::Gate")
    assert gate.origin == ["gate"] and "Tanh" in {n.op_type for n in result.onnx_graph.nodes}


LU_MODEL = """
import torch


class LuSolve(torch.nn.Module):
    def forward(self, a, b):
        lu, pivots, _ = torch.linalg.lu_factor_ex(a + 4 * torch.eye(4))  # as kornia solves homographies
        return torch.linalg.lu_solve(lu, pivots, b)


def build():
    torch.manual_seed(0)
    return LuSolve(), (torch.randn(2, 4, 4), torch.randn(2, 4, 3))
"""


@pytest.mark.slow
def test_fixports_own_decompositions_fix_linalg_for_the_dynamo_exporter(worker, model_file, tmp_path: Path) -> None:
    """torch has no decomposition of lu_factor_ex and no ONNX function: Fixport's unrolled LU is inlined."""
    from fixport.core.loaders.loading import load_model

    output, model = tmp_path / "lu.onnx", model_file("lu.py", LU_MODEL)
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), dict(DYNAMO), output=str(output)))
    assert "aten::linalg_lu_factor_ex.default" in {p.kind for p in result.before.unsupported}
    assert result.after.unsupported == [], [p.message for p in result.after.unsupported]
    assert {c.kind: c.template_id for c in result.choices}["aten::linalg_lu_factor_ex.default"] == \
        "dynamo.inline_implementation"
    loaded = load_model(model)
    module, inputs = loaded.module, loaded.example_inputs
    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)})
    np.testing.assert_allclose(actual, module(*inputs).numpy(), atol=1e-4)



@pytest.mark.slow
def test_a_decomposition_fix_reaches_an_op_that_appears_only_while_torch_onnx_decomposes(worker, tmp_path) -> None:
    """linalg_solve_ex is captured as itself; torch.onnx's own decomposition turns it into
    _linalg_solve_ex, which has no ONNX function. The inlined fix must apply there too, not only
    to the captured graph's nodes (before, it passed on the node alone and failed in the model)."""
    model = tmp_path / "solve.py"
    model.write_text('''
import torch

FIXPORT_EXAMPLE = {"opset": 18}


class Solve(torch.nn.Module):
    def forward(self, a, b):
        return torch.linalg.solve_ex(a, b)[0]


def build():
    torch.manual_seed(0)
    return Solve().eval(), (torch.randn(3, 3) + 3 * torch.eye(3), torch.randn(3, 2))
''', encoding="utf-8")
    result = worker.run(AutoFixRequest(ModelRequest(str(model)), {"exporter": "dynamo"}))
    assert result.after.unsupported == [], result.rejected
    chosen = [(c.kind, c.family) for c in result.choices]
    assert chosen == [("aten::_linalg_solve_ex.default", "inlined_implementation")]
