"""Every hand-written fix under both exporters, from the one table (tests/fix_library_table.py).

Each row is exported for real by the worker with its fix applied, run in ONNX Runtime and compared
with torch; a fix meant for one exporter is checked to be left out of the other's library. With
FIXPORT_FIX_LIBRARY_RESULTS=path.json set, the outcomes are written there, and
``python -m tests.fix_library_page path.json`` turns them into docs/benchmarks/fix_library.md.
"""
from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixport.core.project.project import FixMapping
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.vocabulary import DYNAMO_DECOMPOSITION_FAMILY, ProblemReason, split_python_op
from fixport.symbolics.dynamo.library import dynamo_library
from fixport.symbolics.library import TemplateInfo, TemplateLibrary, params_for
from tests.fix_library_table import ATOL, BY_ID, CASES, DYNAMO, DYNAMO_OPSET, EXPORTERS, TORCHSCRIPT, FixCase

RESULTS_ENV = "FIXPORT_FIX_LIBRARY_RESULTS"
PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "fix_library.md"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FAST = {"decompose.threshold_where"}  # one converted fix stays in the fast tier, under both exporters
LIBRARIES = {TORCHSCRIPT: TemplateLibrary(user_dir="/nonexistent"), DYNAMO: dynamo_library(user_dir="/nonexistent")}
_outcomes: dict[str, dict[str, dict[str, str]]] = {}


def _template(template_id: str) -> TemplateInfo:
    library = LIBRARIES[TORCHSCRIPT] if template_id in LIBRARIES[TORCHSCRIPT] else LIBRARIES[DYNAMO]
    return library.get(template_id)


def _params() -> list:
    cases = [(case, exporter) for case in CASES for exporter in EXPORTERS]
    return [pytest.param(case, exporter, id=f"{case.template_id}-{exporter}",
                         marks=() if case.template_id in FAST else pytest.mark.slow) for case, exporter in cases]


@pytest.fixture(scope="module", autouse=True)
def _write_outcomes() -> Iterator[None]:
    yield
    path = os.environ.get(RESULTS_ENV)
    if path:
        from fixport.core.sweep.stamp import machine_stamp

        written = {"stamp": machine_stamp(), "outcomes": _outcomes}
        Path(path).write_text(json.dumps(written, indent=1, sort_keys=True), encoding="utf-8")


def _record(case: FixCase, exporter: str, outcome: str, detail: str = "") -> None:
    _outcomes.setdefault(case.template_id, {})[exporter] = {"outcome": outcome, "detail": detail}


def _model_source(case: FixCase, opset: int) -> str:
    names = ", ".join(["x", "y", "z"][:len(ast.parse(case.inputs, mode="eval").body.elts)])
    return (f"import torch\nimport torch.nn.functional as F\nimport torchvision  # noqa: F401\n\n"
            f"FIXPORT_EXAMPLE = {{'opset': {opset}}}\n\n\n"
            f"class Sample(torch.nn.Module):\n    def forward(self, {names}):\n"
            f"        return {case.forward or None}\n\n\n"
            f"def build():\n    torch.manual_seed(0)\n    return ({case.module or 'Sample()'}).eval(), {case.inputs}\n")


def _kind(op: str, exporter: str) -> tuple[str, str | None]:
    kind, python_op_name = split_python_op(op)
    return (kind if exporter == DYNAMO or kind.startswith("prim::") else kind.split(".")[0]), python_op_name


def _mappings(case: FixCase, exporter: str) -> list[FixMapping]:
    library, mappings = LIBRARIES[exporter], []
    for template_id, op in case.ops():
        if template_id not in library:  # a companion fix the other exporter needs only
            continue
        template = library.get(template_id)
        kind, python_op_name = _kind(op, exporter)
        chosen = case.params if (template_id, op) == case.ops()[0] else {}
        params = {**params_for(kind, template.default_params()), **chosen}
        mappings.append(FixMapping(kind, template_id, template.source, params, python_op_name=python_op_name,
                                   custom_opsets=dict(template.custom_opsets)))
    return mappings


def _check(worker, case: FixCase, exporter: str, tmp_path: Path) -> str:
    """Export the case's model with its fixes; what matched torch, or an AssertionError saying what did not."""
    opset = DYNAMO_OPSET if exporter == DYNAMO else case.opset
    if case.example:
        model = EXAMPLES / f"{case.example}.py"
        options = {"exporter": exporter} | ({"opset": DYNAMO_OPSET} if exporter == DYNAMO else {})
    else:
        model = tmp_path / "sample.py"
        model.write_text(_model_source(case, opset), encoding="utf-8")
        options = {"exporter": exporter, "opset": opset}
    result = worker.run(AnalyzeRequest(ModelRequest(str(model)), options, _mappings(case, exporter),
                                       output=str(tmp_path / "fixed.onnx")))
    # differences from torch are judged by the row's tolerance below, not the worker's default one
    problems = [p for p in result.unsupported if p.reason != ProblemReason.MISMATCH]
    assert not problems, [f"{p.kind}: {p.message[:300]}" for p in problems]
    if _template(case.template_id).family != DYNAMO_DECOMPOSITION_FAMILY:  # a decomposition replaces the op
        kinds = {node.kind for node in (result.source_graph.nodes if result.source_graph else [])}
        wanted = _kind(case.op, exporter)[0]
        assert wanted in kinds or any(k.startswith(wanted) for k in kinds), \
            f"the model has no {wanted} node for the fix to apply to (the exporter decomposed it first)"
    assert result.output_max_abs is not None, "ONNX Runtime's outputs were not compared with torch's"
    tolerance = _template(case.template_id).tolerance
    atol = case.atol if case.atol is not None else tolerance[1] if tolerance else ATOL
    assert result.output_max_abs <= atol, f"max |ONNX Runtime - torch| = {result.output_max_abs:.3g} > {atol}"
    return f"max abs diff {result.output_max_abs:.2g}"


@pytest.mark.parametrize(("case", "exporter"), _params())
def test_fix_under_exporter(worker, tmp_path: Path, case: FixCase, exporter: str) -> None:
    template = _template(case.template_id)
    if not template.for_exporter(exporter) or case.template_id not in LIBRARIES[exporter]:
        assert case.template_id not in LIBRARIES[exporter], f"the {exporter} library offers a fix not written for it"
        why = template.torchscript_only or ("a g.op template file of the TorchScript library"
                                            if case.template_id in LIBRARIES[TORCHSCRIPT] else
                                            "a template of the dynamo library")
        _record(case, exporter, "not for this exporter", why)
        return
    expected_failure = case.xfail.get(exporter)
    if expected_failure is None:
        _record(case, exporter, "works", _check(worker, case, exporter, tmp_path))
        return
    with pytest.raises(AssertionError) as failed:
        _check(worker, case, exporter, tmp_path)
    _record(case, exporter, "expected failure", expected_failure)
    assert str(failed.value), "the failure says what went wrong"


def test_the_table_has_one_row_for_every_hand_written_fix() -> None:
    builtins = {t.id for library in LIBRARIES.values() for t in library.all() if t.builtin}
    assert builtins == set(BY_ID), (sorted(builtins - set(BY_ID)), sorted(set(BY_ID) - builtins))
    assert len(CASES) == len(BY_ID), "one row per template"


def test_fixes_for_both_exporters_are_offered_by_both_libraries() -> None:
    for template in LIBRARIES[TORCHSCRIPT].all():
        if template.builtin and template.exporters == (TORCHSCRIPT, DYNAMO):
            assert template.id in LIBRARIES[DYNAMO], template.id
            assert all("." in fit for fit in template.fits), f"{template.id}: a dynamo fit names the overload"
        elif template.builtin and template.exporters == (TORCHSCRIPT,):
            assert template.torchscript_only and template.id not in LIBRARIES[DYNAMO], template.id


def test_the_page_reports_every_row() -> None:
    page = PAGE.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([\w.]+)` \|", page, re.M))
    assert listed == set(BY_ID), "regenerate docs/benchmarks/fix_library.md (see tests/fix_library_page.py)"


def test_the_inspector_names_the_onnx_ops_a_fix_writes_in_either_form() -> None:
    from fixport.core.onnx_io.op_docs import onnx_ops_in_source

    function = LIBRARIES[DYNAMO].get("decompose.threshold_where").source
    assert onnx_ops_in_source(function) == ["Constant", "Where", "Greater"]
    symbolic = LIBRARIES[TORCHSCRIPT].get("torchvision.roi_align_aligned").source
    assert onnx_ops_in_source(symbolic)[:2] == ["Gather", "Constant"]
