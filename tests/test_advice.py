"""Advice fits the problem's kind and never repeats the step just taken (issue 33, item 7): a stub
from the schema only for an op of the model, the model's code for a capture failure, the other
exporter for torch.onnx's own passes, and never `fix --auto` right after it ran."""
from __future__ import annotations

import pytest

from fixport.core.words.advice import Step, advice_for, advice_without_a_list, takes_a_template
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import PYTHON_OP_KIND, UNPLACED_KIND, ProblemReason
from tests.test_capture_code_change_fixes import BRANCH_IN_A_FUNCTION

STUB = "a stub is generated from its schema"


def _problem(kind: str, reason: ProblemReason, source: str = "model.py:7", **fields) -> UnsupportedNode:
    return UnsupportedNode(kind, "n1", reason, "", "", source, **fields)


# (problem, exporter, words the advice must hold); none of them takes a template.
NO_TEMPLATE_FITS = [
    ("data-dependent capture", _problem("torch.export::data_dependent_error", ProblemReason.CAPTURE_FAILED), "dynamo",
     ["change the model's code at model.py:7", "--exporter torchscript"]),
    ("torch.onnx's pass (dynamo)", _problem("aten::view", ProblemReason.EXPORT_FAILED), "dynamo",
     ["torch.onnx's own pass failed at aten::view", "--exporter torchscript", "rewrite the line at model.py:7"]),
    ("the export after every node (TorchScript)", _problem("(export)", ProblemReason.EXPORT_FAILED, source=""),
     "torchscript", ["torch.onnx's own pass failed", "--exporter dynamo"]),
    ("ONNX Runtime names no node", _problem(UNPLACED_KIND, ProblemReason.RUNTIME_ERROR, source=""), "torchscript",
     ["names no node of the export", "--opset", "--exporter dynamo"]),
    ("a node the exporter made", _problem("onnx::Split", ProblemReason.RUNTIME_ERROR, source="",
                                          onnx_node="node_Split_3"), "dynamo",
     ["refuses the node node_Split_3", "--opset", "--exporter torchscript"]),
    ("sizes the code baked", _problem("aten::view", ProblemReason.SHAPE_SPECIALISED), "torchscript",
     ["change the model's code at model.py:7"]),
    ("random output", _problem("aten::dropout", ProblemReason.RANDOM_OUTPUT), "torchscript",
     ["change the model's code at model.py:7"]),
    ("a crash", _problem("(export)", ProblemReason.WORKER_CRASH, source=""), "torchscript",
     ["torch crashed", "main.py check m.py --exporter torchscript"]),
]


@pytest.mark.parametrize(("problem", "exporter", "words"), [case[1:] for case in NO_TEMPLATE_FITS],
                         ids=[case[0] for case in NO_TEMPLATE_FITS])
@pytest.mark.parametrize("done", list(Step))
def test_advice_for_what_no_template_fixes_names_what_does(problem, exporter: str, words: list[str],
                                                          done: Step) -> None:
    advice = advice_for(problem, exporter, "m.py", done)
    assert not takes_a_template(problem)
    assert STUB not in advice and "--auto" not in advice, advice
    for word in words:
        assert word in advice, advice


@pytest.mark.parametrize("problem", [
    _problem("aten::grid_sampler", ProblemReason.RUNTIME_ERROR, onnx_node="/attn/GridSample"),
    _problem("aten::linalg_ldl_factor", ProblemReason.NO_SYMBOLIC),
    _problem("mylib::soft_clip", ProblemReason.CUSTOM_OP),
    _problem(PYTHON_OP_KIND, ProblemReason.PYTHON_OP, python_op_name="MyClip"),
    _problem("aten::amax.default", ProblemReason.MISMATCH),
], ids=lambda p: p.display_kind)
def test_an_op_of_the_model_gets_fix_auto_first_and_a_stub_after_it(problem: UnsupportedNode) -> None:
    assert takes_a_template(problem)
    first = advice_for(problem, "torchscript", "m.py", Step.CHECKED)
    assert "main.py fix m.py --exporter torchscript --auto -o fixes.fixport.json" in first and STUB not in first
    after = advice_for(problem, "torchscript", "m.py", Step.AUTO_FIXED)
    assert STUB in after and "--auto" not in after


def test_an_export_whose_problems_were_not_listed_gets_fix_first_and_check_after() -> None:
    first = advice_without_a_list("m.py", "torchscript", Step.CHECKED)
    assert "main.py fix m.py --exporter torchscript --auto" in first
    after = advice_without_a_list("m.py", "torchscript", Step.AUTO_FIXED)
    assert "--auto" not in after and "main.py check m.py --exporter torchscript --project" in after


@pytest.mark.slow
def test_fix_then_compare_on_a_capture_failure_never_sends_the_user_back_to_fix(cli, worker, tmp_path) -> None:
    """The issue's sequence on a data-dependent branch under dynamo: fix --auto says to change the
    code (no stub), and compare --project with its project says the same, not `fix --auto` again."""
    from fixport.cli.fixing import unfixed_advice
    from fixport.core.project.project import Project, save_project
    from fixport.core.records.requests import AutoFixRequest
    from fixport.core.records.results import ModelRequest

    # A branch in a module-level function: no method to change for the capture, and draft_export's
    # program takes the example's branch (wrong at other values), so fix --auto leaves it.
    model, project = tmp_path / "branchy.py", tmp_path / "p.fixport.json"
    model.write_text(BRANCH_IN_A_FUNCTION, encoding="utf-8")
    fixed = worker.run(AutoFixRequest(ModelRequest(str(model)), {"exporter": "dynamo"}))
    (advice,) = unfixed_advice(fixed, model.name).values()
    assert advice.startswith("change the model's code at branchy.py:") and STUB not in advice
    save_project(Project(model_path=str(model), export_options={"exporter": "dynamo"}, mappings=fixed.mappings),
                 str(project))
    compared = cli("compare", str(model), "--project", str(project))
    assert compared.returncode == 2, compared.stdout + compared.stderr
    hint = compared.stderr.split("→", 1)[1]
    assert "Change the model's code at branchy.py:" in hint
    assert "--auto" not in hint and "main.py fix" not in hint and "Traceback" not in compared.stderr
