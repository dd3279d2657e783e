"""The session's workflows without Qt: open and analyse, select a node and get its offers, apply a
fix, Fix all with one autosave, the TorchScript exporter's opset advice as data, and the events in
the order the window's docks receive them. Real worker, real exports of small models."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixport.core.project.project import FixMapping, load_project
from fixport.core.session import events
from fixport.core.session.fix_all import opset_that_works
from fixport.core.session.jobs import QueuedJobs
from fixport.core.session.session import SOURCE, Session
from fixport.core.session.workbench import Workbench
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
from fixport.symbolics.library import TemplateLibrary, params_for
from tests.test_cli_check_export import FAILING_MODEL

THRESHOLD_AND_ASINH = FAILING_MODEL  # two kinds to fix: aten::threshold and aten::asinh

CUMSUM = """
    import torch

    class Model(torch.nn.Module):
        def forward(self, x):
            return x.cumsum(1) * 2

    def build():
        return Model().eval(), (torch.randn(2, 5),)
"""


@pytest.fixture
def session(worker, tmp_path: Path, monkeypatch) -> tuple[Session, QueuedJobs]:
    """A session on the shared warm worker, its autosaves in tmp_path; a job failure fails the test."""
    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "autosave")

    def fail(request, error) -> None:
        raise AssertionError(f"{type(request).__name__} failed: {error}")

    jobs = QueuedJobs(worker, on_failed=fail)
    return Session(jobs), jobs


def open_and_analyse(session: Session, jobs: QueuedJobs, path: Path, **options) -> None:
    assert session.open(path, options or None)
    jobs.run_all()
    assert session.workbench.analysis is not None


def kinds_of(recorded: list[object]) -> list[str]:
    return [type(event).__name__ for event in recorded]


def test_the_session_imports_neither_qt_nor_torch() -> None:
    code = ("import sys, fixport.core.session.session, fixport.core.session.jobs; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'torch', 'onnxscript'}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


def test_open_analyses_and_starts_at_the_first_problem(session, model_file) -> None:
    session, jobs = session
    recorded = session.events.record()
    open_and_analyse(session, jobs, model_file("two.py", THRESHOLD_AND_ASINH), opset=12)
    assert kinds_of(recorded) == ["Logged", "Opened", "ExportStarted", "AnalysisArrived"]
    arrived = recorded[-1]
    assert {p.kind for p in arrived.result.unsupported} == {"aten::threshold", "aten::asinh"}
    assert jobs.ran == ["analyze"]
    assert session.analyzed_request == session.workbench.analyze_request()

    recorded.clear()
    session.reselect()  # what the window does once the graphs have painted
    first = session.workbench.analysis.unsupported[0]
    assert session.selected == (SOURCE, first.instance)
    assert kinds_of(recorded) == ["NodeSelected", "TargetChanged", "NodeShown"]
    assert recorded[0].source_instance == first.instance and recorded[2].problem == first


def test_selecting_a_node_offers_its_fixes_and_caches_what_the_worker_said(session, model_file) -> None:
    session, jobs = session
    open_and_analyse(session, jobs, model_file("two.py", THRESHOLD_AND_ASINH), opset=12)
    threshold = next(p for p in session.workbench.analysis.unsupported if p.kind == "aten::threshold")
    recorded = session.events.record()
    session.select_node(SOURCE, threshold.instance)
    target = next(e for e in recorded if isinstance(e, events.TargetChanged)).target
    assert (target.kind, target.instance, target.opset) == ("aten::threshold", threshold.instance, 12)
    assert target.suggested_opset is None and target.exporter.name == "torchscript"
    jobs.run_all()  # the op's documentation and the generated fixes, from the worker
    assert jobs.ran[-2:] == ["synthesize", "op_info"]
    assert "aten::threshold" in session.op_infos
    shown = [e for e in recorded if isinstance(e, events.NodeShown)]
    assert shown[0].op_info is None and shown[-1].op_info is session.op_infos["aten::threshold"]

    ran = len(jobs.ran)
    session.select_node(SOURCE, threshold.instance)  # asked once per kind: nothing new to run
    jobs.run_all()
    assert len(jobs.ran) == ran


def test_applying_a_fix_edits_the_project_and_exports_again(session, model_file) -> None:
    session, jobs = session
    open_and_analyse(session, jobs, model_file("two.py", THRESHOLD_AND_ASINH), opset=12)
    template = TemplateLibrary().get("decompose.threshold_where")
    mapping = FixMapping("aten::threshold", template.id, template.source,
                         params_for("aten::threshold", template.default_params()))
    recorded = session.events.record()
    session.apply_mapping(mapping)
    assert kinds_of(recorded) == ["ProjectEdited", "Logged", "ExportStarted"]
    assert session.workbench.autosave_file().exists()
    jobs.run_all()
    arrived = recorded[-1]
    assert isinstance(arrived, events.AnalysisArrived) and arrived.fixed == [mapping.label]
    assert [p.kind for p in arrived.result.unsupported] == ["aten::asinh"]
    assert arrived.highlighted, "the ONNX nodes the fix made are marked"
    assert session.highlight_after_export == set()


# Pasted in the Template dock's editor in the oldest form: a TEMPLATE dict, torch and params injected.
PASTED_OLD_FORM = '''"""aten::asinh as Asinh."""
TEMPLATE = {"id": "user.asinh", "title": "Asinh", "description": "The ONNX op.", "family": "user",
            "fits": ["aten::asinh"], "min_opset": 9, "max_opset": None, "params": {}, "runs_in_onnxruntime": True,
            "custom_opsets": {}, "notes": ""}


def symbolic(g, self):
    return g.op("Asinh", g.op("Mul", self, g.op("Constant", value_t=torch.tensor(params.get("scale", 1.0)))))
'''


def test_text_pasted_in_an_older_form_is_converted_when_applied(session, model_file) -> None:
    session, jobs = session
    open_and_analyse(session, jobs, model_file("two.py", THRESHOLD_AND_ASINH), opset=12)
    recorded = session.events.record()
    session.apply_mapping(FixMapping("aten::asinh", "user.asinh", PASTED_OLD_FORM, edited=True))
    (kept,) = session.workbench.project.mappings
    assert "import torch\n" in kept.source and "\n@fix(\n" in kept.source and "TEMPLATE =" not in kept.source
    assert kept.meta is not None and kept.meta.exporters == ("torchscript",)
    said = [e.text for e in recorded if isinstance(e, events.Logged) and "converted" in e.text]
    assert len(said) == 1 and "aten::asinh (user.asinh)" in said[0]
    jobs.run_all()
    assert [p.kind for p in session.workbench.analysis.unsupported] == ["aten::threshold"]


def test_fix_all_fixes_both_kinds_with_one_autosave(session, model_file, monkeypatch) -> None:
    session, jobs = session
    open_and_analyse(session, jobs, model_file("two.py", THRESHOLD_AND_ASINH), opset=12)
    writes: list[int] = []
    autosave = session.workbench.autosave
    monkeypatch.setattr(session.workbench, "autosave", lambda: (writes.append(1), autosave()))
    recorded = session.events.record()
    session.start_fix_all()
    jobs.run_all()
    assert jobs.ran[-1] == "auto_fix"  # no export after it: its last analysis is the project's
    assert len(session.workbench.project.mappings) == 2
    assert len(writes) == 1, "one project write for the whole Fix all"
    assert kinds_of(recorded) == ["Logged", "Logged", "ProjectEdited", "AnalysisArrived", "FixAllApplied"]
    assert recorded[1].text.startswith("Fix all: 2 kind(s) fixed")
    assert session.workbench.analysis.unsupported == []
    assert {o.label for o in session.fix_outcomes if o.fitted} == {"aten::threshold", "aten::asinh"}
    assert recorded[3].outcomes == session.fix_outcomes
    assert session.analyzed_request == session.workbench.analyze_request()  # the next Fix all starts there


def test_torchscript_advice_is_a_field_and_the_offer(session, model_file) -> None:
    session, jobs = session
    open_and_analyse(session, jobs, model_file("cumsum.py", CUMSUM), opset=10)
    [problem] = session.workbench.analysis.unsupported
    assert (problem.kind, problem.reason, problem.opset_advice) == ("aten::cumsum", ProblemReason.SYMBOLIC_REJECTED, 11)
    recorded = session.events.record()
    session.activate_problem(problem)
    target = next(e for e in recorded if isinstance(e, events.TargetChanged)).target
    assert target.suggested_opset == 11
    session.raise_opset(target.suggested_opset)
    jobs.run_all()
    assert session.workbench.analysis.unsupported == []
    assert session.workbench.project.export_options["opset"] == 11


def test_the_session_reads_no_advice_from_messages() -> None:
    """A problem's words are not advice: only the exporter's field is (dynamo leaves it None)."""
    problem = UnsupportedNode("aten::cumsum", "n1", ProblemReason.SYMBOLIC_REJECTED,
                              "Unsupported: ONNX export of cumsum in opset 9. Please try opset version 11.", "", "")
    assert opset_that_works(problem, 9) is None
    problem.opset_advice = 11
    assert opset_that_works(problem, 9) == 11 and opset_that_works(problem, 11) is None


def test_fix_alls_summary_says_whether_compare_can_run_by_the_runs_rule() -> None:
    """Fix all and `fix --auto` read their search as the ExporterRun sweep rows and `compare --exporters`
    read: one rule for "compare can run" (a runtime error leaves an export to compare, a rejected
    symbolic does not) and one for the options after the fix."""
    from fixport.core.project.export_options import ExportOptions
    from fixport.core.records.exporter_comparison import ExporterRun
    from fixport.core.records.results import AnalysisResult, AutoFixResult
    from fixport.core.session.fix_all import plan_from

    def search(reason: ProblemReason, opset_raised: tuple[int, int] | None = None) -> AutoFixResult:
        left = [UnsupportedNode("aten::asinh", "n1", reason, "no symbolic", "", "")]
        before = AnalysisResult("model.py", "python", ExportOptions(opset=12), None, None, left, ["x"], [(2, 5)])
        after = AnalysisResult("model.py", "python", ExportOptions(opset=(opset_raised or (0, 12))[1]), None, None,
                               left, ["x"], [(2, 5)])
        return AutoFixResult(before, after, no_template=["aten::asinh"], opset_raised=opset_raised)

    blocked = ExporterRun.from_auto_fix(search(ProblemReason.SYMBOLIC_REJECTED, (12, 13)), {"exporter": "torchscript"})
    assert not blocked.compare_can_run and blocked.options == {"exporter": "torchscript", "opset": 13}
    summary = plan_from(blocked, []).summary()
    assert summary.startswith("Fix all: 0 kind(s) fixed, opset raised to 13; no fix fitted aten::asinh; "
                              "1 problem(s) keep the export from running in ONNX Runtime: aten::asinh"), summary
    runs = ExporterRun.from_auto_fix(search(ProblemReason.RUNTIME_ERROR), {}, pin_opset=False)
    assert runs.compare_can_run and runs.options == {}
    assert "; compare can run." in plan_from(runs, []).summary()


def test_open_failure_is_an_error_event_and_leaves_nothing_open(session, tmp_path: Path) -> None:
    session, _ = session
    recorded = session.events.record()
    assert not session.open(tmp_path / "missing.fixport.json")
    assert kinds_of(recorded) == ["ErrorRaised"] and session.workbench.project is None


def test_batched_edits_write_the_project_once(tmp_path: Path, monkeypatch) -> None:
    """Nested batches write once, at the outer end; a batch without edits writes nothing."""
    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "autosave")
    workbench = Workbench()
    workbench.open_model(tmp_path / "model.py")
    writes: list[int] = []
    autosave = workbench.autosave
    monkeypatch.setattr(workbench, "autosave", lambda: (writes.append(1), autosave()))
    with workbench.batched_edits():
        pass
    assert writes == [] and not workbench.dirty
    with workbench.batched_edits():
        workbench.set_export_option("opset", 13)
        with workbench.batched_edits():
            workbench.set_export_option("exporter", "dynamo")
        assert writes == []
    assert writes == [1] and workbench.dirty
    assert load_project(workbench.autosave_file()).export_options == {"opset": 13, "exporter": "dynamo"}
    workbench.set_export_option("opset", 14)  # outside a batch: each edit is written at once
    assert writes == [1, 1]


def test_saving_and_discarding_the_autosave_are_session_events(tmp_path: Path, monkeypatch) -> None:
    """The window's Save and the restore bar's Discard go through the session, which says what it did."""
    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "autosave")
    session = Session(QueuedJobs(None))
    session.workbench.open_model(tmp_path / "model.py")
    session.set_export_option("opset", 13)
    autosave = session.workbench.autosave_file()
    assert autosave is not None and autosave.exists()
    recorded = session.events.record()
    session.discard_autosave()
    assert kinds_of(recorded) == ["AutosaveDiscarded"] and not autosave.exists()

    recorded.clear()
    saved = session.save(tmp_path / "model")
    assert saved == (tmp_path / "model.fixport.json").resolve()
    assert kinds_of(recorded) == ["Logged", "ProjectSaved"] and recorded[-1].path == saved
    assert load_project(saved).export_options == {"opset": 13} and not session.workbench.dirty


def test_opening_a_project_with_an_old_form_fix_says_once_that_it_was_converted(session, tmp_path: Path) -> None:
    """The window's Log tells what ``--project`` commands print: the fix's template was converted."""
    import json

    from tests.test_fix_registry import BARE_INJECTED

    session, _ = session
    (tmp_path / "m.py").write_text(THRESHOLD_AND_ASINH, encoding="utf-8")
    path = tmp_path / "old.fixport.json"
    path.write_text(json.dumps({"format_version": 3, "model_path": "m.py", "mappings": [
        {"target_kind": "aten::asinh", "template_id": "user.scaled_asinh", "source": BARE_INJECTED,
         "params": {"scale": 3.0}}]}))
    recorded = session.events.record()
    assert session.open(path)
    notes = [e.text for e in recorded if isinstance(e, events.Logged) and e.text.startswith("Note:")]
    assert len(notes) == 1 and "aten::asinh (user.scaled_asinh): converted to the current template form" in notes[0]
