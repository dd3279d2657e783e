"""Issue 46, item 3: a failure in torch.onnx's own pass over the captured graph is fixed by an FX
pass at the failing line. ``(1.0 - mask) * -1e4`` with an integer attention mask stops torch.onnx's
type promotion ("Cannot find a compatible OpOverload for aten.sub", pytorch#194381); `fix --auto`
casts the mask to float first, verifies it at the traced and the other sizes, keeps it in the
project, and the fix script does the same without Fixport."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnxruntime as ort
import pytest
import torch

from fixport.core.exporters.dynamo.candidates import candidates_for, fixable
from fixport.core.fixing.generated_fixes import generated_offers
from fixport.core.project.project import load_project
from fixport.core.records.exporter_comparison import ExporterRun
from fixport.core.records.fix_choices import FAMILY_GRAPH_REWRITE
from fixport.core.records.requests import AutoFixRequest, SynthesizeRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason
from fixport.symbolics.synthesis.graph_rewrite import CAST_INTEGER_OPERAND_ID, cast_integer_operand_template

# The attention-mask pattern of many transformers models, with batch and length declared dynamic.
MASKED_ATTENTION = '''
import torch

FIXPORT_EXAMPLE = {"opset": 18, "export_options": {
    "input_names": ["x", "mask"],
    "dynamic_axes": {"x": {0: "batch", 1: "length"}, "mask": {0: "batch", 1: "length"}}}}


class MaskedAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / 8 ** 0.5
        scores = scores + (1.0 - mask[:, None, :]) * -10000.0
        return scores.softmax(-1) @ v


def build():
    torch.manual_seed(0)
    return MaskedAttention().eval(), (torch.randn(2, 6, 8), torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]]))
'''
MASK_LINE = "masked_attention.py:17"
DYNAMO = {"exporter": "dynamo"}


def _pass_failure(kind: str = "aten::sub.Tensor") -> UnsupportedNode:
    return UnsupportedNode(kind, "rsub", ProblemReason.EXPORT_FAILED, "Cannot find a compatible OpOverload",
                           "", MASK_LINE)


def test_a_failing_pass_gets_only_the_graph_rewrite_at_its_line() -> None:
    problem = _pass_failure()
    assert fixable(problem) and not fixable(_pass_failure("aten::view.default"))  # a rewrite exists for arithmetic only
    (candidate,) = candidates_for(problem, None, allow_custom=True)  # type: ignore[arg-type] -- no template asked
    assert candidate.family == FAMILY_GRAPH_REWRITE and candidate.mapping.template_id == CAST_INTEGER_OPERAND_ID
    assert candidate.mapping.params == {"line": MASK_LINE} and MASK_LINE in candidate.why


@pytest.mark.slow  # two captures with torch.export
def test_the_rewrite_casts_only_integer_operands_of_float_arithmetic_at_its_line() -> None:
    class Model(torch.nn.Module):
        def forward(self, x, mask, ids):
            return x * (1.0 - mask) + (ids + 1).float()  # ids + 1: integer arithmetic, left alone

    args = (torch.randn(2, 3), torch.tensor([[1, 0, 1], [0, 1, 1]]), torch.tensor([[1, 2, 3], [4, 5, 6]]))
    namespace: dict = {}
    exec(compile(cast_integer_operand_template(), "<template>", "exec"), namespace)  # noqa: S102 -- our own source
    program = torch.export.export(Model(), args)
    changed = namespace["symbolic"](program)
    assert [(node, target) for node, target, _ in changed] == [("rsub", "aten.rsub.Scalar")], changed
    assert "torch.int64 operand mask cast to torch.float32" in changed[0][2]
    assert torch.equal(program.module()(*args), Model()(*args))
    namespace["params"] = {"line": "elsewhere.py:1"}
    assert namespace["symbolic"](torch.export.export(Model(), args)) == []


def test_the_template_dock_offers_the_rewrite_for_float_arithmetic() -> None:
    offers = generated_offers(SynthesizeRequest("aten::sub.Tensor", 18, "dynamo"))
    (offer,) = [o for o in offers if o.template_id == CAST_INTEGER_OPERAND_ID]
    assert "type promotion" in offer.why and offer.template.family == "dynamo_graph_rewrite"
    assert not [o for o in generated_offers(SynthesizeRequest("aten::cosh.default", 18, "dynamo"))
                if o.template_id == CAST_INTEGER_OPERAND_ID]


@pytest.mark.slow
def test_fix_auto_rewrites_the_graph_and_names_the_node(worker, model_file) -> None:
    model = ModelRequest(str(model_file("masked_attention.py", MASKED_ATTENTION)))
    fixed = worker.run(AutoFixRequest(model, dict(DYNAMO)))
    assert [(p.kind, p.reason, p.source) for p in fixed.before.unsupported] == [
        ("aten::sub.Tensor", "export_failed", MASK_LINE)]
    assert fixed.after.unsupported == [], [p.message for p in fixed.after.unsupported]
    (choice,) = fixed.choices
    assert choice.family == FAMILY_GRAPH_REWRITE and choice.max_abs is not None and choice.max_abs < 1e-5
    assert [(r.node, r.target) for r in choice.rewrites] == [("rsub", "aten.rsub.Scalar")]
    assert len(fixed.after.other_sizes_checked) == 2  # batch and length at other sizes, matching torch
    (mapping,) = fixed.mappings
    assert mapping.template_id == CAST_INTEGER_OPERAND_ID and mapping.params == {"line": MASK_LINE}

    from fixport.core.session.fix_all import plan_from

    # the window's Fix all: its row and its Log say which node it rewrote
    plan = plan_from(ExporterRun.from_auto_fix(fixed), [])
    (outcome,) = plan.outcomes
    assert outcome.how.startswith(f"graph_rewrite: {CAST_INTEGER_OPERAND_ID}"), outcome.how
    assert "rsub (aten.rsub.Scalar)" in outcome.how
    assert any("rewrote the captured graph's node rsub" in note for note in plan.notes), plan.notes


@pytest.mark.slow
def test_the_project_and_the_fix_script_keep_the_rewrite(cli, model_file, tmp_path: Path) -> None:
    path = model_file("masked_attention.py", MASKED_ATTENTION)
    project = tmp_path / "masked.fixport.json"
    fixed = cli("fix", str(path), "--exporter", "dynamo", "--auto", "-o", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "rewrote the captured graph's node rsub (aten.rsub.Scalar)" in fixed.stdout, fixed.stdout
    assert [m.template_id for m in load_project(project).mappings] == [CAST_INTEGER_OPERAND_ID]
    script = tmp_path / "masked_export.py"
    assert cli("script", str(project), "-o", str(script)).returncode == 0
    output = tmp_path / "from_script.onnx"
    without_fixport = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, str(script), "-o", str(output)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False, env=without_fixport)
    assert ran.returncode == 0 and output.exists(), ran.stdout[-2000:] + ran.stderr[-3000:]
    assert "rewrote the captured graph's node rsub" in ran.stdout
    assert "batch=" in ran.stdout  # the script checked the other sizes too
    session = ort.InferenceSession(str(output))  # and the mask stays an integer input of the ONNX graph
    assert [i.type for i in session.get_inputs()] == ["tensor(float)", "tensor(int64)"]


@pytest.mark.slow
def test_the_windows_fix_all_names_the_node_it_rewrote(worker, model_file, tmp_path: Path, monkeypatch) -> None:
    """The session behind the window: Fix all's row for the kind and its Log say which node changed how."""
    from fixport.core.session import events
    from fixport.core.session.jobs import QueuedJobs
    from fixport.core.session.session import Session

    monkeypatch.setattr("fixport.core.session.workbench.AUTOSAVE_DIR", tmp_path / "autosave")
    jobs = QueuedJobs(worker, on_failed=lambda request, error: pytest.fail(f"{type(request).__name__}: {error}"))
    session = Session(jobs)
    assert session.open(model_file("masked_attention.py", MASKED_ATTENTION), dict(DYNAMO))
    jobs.run_all()
    recorded = session.events.record()
    session.start_fix_all()
    jobs.run_all()
    assert session.workbench.analysis is not None and session.workbench.analysis.unsupported == []
    assert [m.template_id for m in session.workbench.project.mappings] == [CAST_INTEGER_OPERAND_ID]
    (row,) = session.fix_outcomes
    assert row.fitted and "rewrote rsub (aten.rsub.Scalar): its torch.int64 operand" in row.how, row.how
    log = [event for event in recorded if isinstance(event, events.Logged)]
    assert any("rewrote the captured graph's node rsub" in event.details for event in log), log
