"""The plain-torch baseline guard: Fixport must never do worse than ``torch.onnx.export`` alone.

`check --baseline` and `sweep --baseline` export the same call with plain torch.onnx.export, run it
in ONNX Runtime at the sizes Fixport's check used, and flag a model the plain export gets right and
Fixport does not. tests/test_guard_sweep.py runs the corpus and the held-out models through it.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from fixport.core.project.project import FixMapping, Project, save_project
from fixport.core.records.baseline import (
    WORSE_PREFIX,
    BaselineResult,
    BaselineSet,
    BaselineVerdict,
    fixport_worse,
)
from fixport.core.records.requests import BaselineRequest
from fixport.core.records.results import ModelRequest
from fixport.core.sweep.cache import SweepCache
from fixport.core.sweep.model_sweep import sweep_model
from fixport.core.sweep.reports import junit_xml, markdown, sweep_json
from fixport.core.sweep.rows import SweepRow, SweepSettings
from fixport.core.sweep.stamp import machine_stamp
from fixport.core.words.vocabulary import EXPORTERS
from tests.conftest import slow_but_one

TINY = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2


def build():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(2, 4),)
'''
# A fix that maps aten::relu to Neg: Fixport's export with it is wrong, torch's own is right.
WRONG_RELU_FIX = "def symbolic(g, x):\n    return g.op('Neg', x)\n"
DYNAMIC_BATCH = '{"x": {"0": "batch"}}'


def _right(sets: int = 3) -> BaselineResult:
    return BaselineResult("torchscript", 17, exported=True, ran=True,
                          sets=[BaselineSet(f"set {i}", True, 1e-7) for i in range(sets)])


def test_the_record_says_right_wrong_or_failed_and_why() -> None:
    assert _right().verdict == BaselineVerdict.RIGHT and _right().line().startswith(
        "plain torch.onnx.export: right at 3 size(s)")
    wrong = _right()
    wrong.sets[1] = BaselineSet("batch=3", False, None, "ONNX Runtime fails: invalid expand shape")
    assert wrong.verdict == BaselineVerdict.WRONG
    assert wrong.line() == ("plain torch.onnx.export: right at 2 size(s) / fails: batch=3: ONNX Runtime fails: "
                            "invalid expand shape")
    failed = BaselineResult("dynamo", 20, export_error="UnsupportedOperatorError: aten::foo")
    assert failed.verdict == BaselineVerdict.FAILED and "torch.onnx.export raised: Unsupported" in failed.line()
    assert BaselineResult.from_json(json.loads(json.dumps(wrong.to_json()))) == wrong


def test_worse_only_where_the_plain_export_is_right_and_fixport_is_not() -> None:
    flagged = [("aten::mul", "mismatch")]
    assert fixport_worse(_right(), False, flagged).startswith(WORSE_PREFIX)
    assert "flagged: aten::mul [mismatch]" in fixport_worse(_right(), False, flagged)
    assert "could not export" in fixport_worse(_right(), False, [("aten::foo", "no_symbolic")])
    assert fixport_worse(_right(), True) == ""  # Fixport right too
    assert fixport_worse(BaselineResult("torchscript", 17, export_error="x"), False, flagged) == ""  # torch fails
    assert fixport_worse(None, False, flagged) == ""  # not asked
    # other values of an input: the baseline does not try them, so it cannot say Fixport is wrong there
    assert fixport_worse(_right(), False, [("onnx::input", "baked_input")]) == ""


def test_sweep_reports_list_the_rows_where_fixport_is_worse_first() -> None:
    fine = SweepRow("/m/a.py", "torchscript", status="clean", verdict="pass", baseline=_right())
    worse = SweepRow("/m/b.py", "torchscript", status="problems", verdict="not compared", baseline=_right(),
                     fixport_worse=fixport_worse(_right(), False, [("aten::foo", "no_symbolic")]))
    settings, stamp = SweepSettings(baseline=True), machine_stamp()
    data = sweep_json([fine, worse], settings, stamp)
    assert [row["model"] for row in data["rows"]] == ["/m/b.py", "/m/a.py"]
    assert data["summary"]["fixport_worse"] == 1 and data["rows"][0]["baseline"]["verdict"] == "right"
    assert SweepRow.from_json(data["rows"][0]).baseline == _right()
    text = markdown([fine, worse], settings, stamp)
    assert "Fixport is worse than plain torch.onnx.export in 1 row(s)" in text
    assert text.index("| b.py") < text.index("| a.py") and "**right, Fixport worse**" in text
    failure = ElementTree.fromstring(junit_xml([fine, worse])).find(".//failure")
    assert failure is not None and failure.get("message", "").startswith(WORSE_PREFIX)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_check_baseline_agrees_with_fixport_on_a_tiny_model(cli, model_file, exporter: str) -> None:
    path = model_file("tiny.py", TINY)
    ran = cli("check", str(path), "--exporter", exporter, "--dynamic-axes", DYNAMIC_BATCH, "--baseline", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    baseline = json.loads(ran.stdout)["baseline"]
    assert baseline["verdict"] == "right" and baseline["fixport_worse"] == ""
    assert [s["label"] for s in baseline["sets"]] == ["example inputs", "batch=3", "batch=1"]  # check's sizes
    assert all(s["max_abs"] < 1e-5 for s in baseline["sets"])


KEYWORDED = '''
import torch


class Keyworded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, *, mask=None, scale=2.0):
        y = self.linear(x) * scale
        return {"out": y * mask if mask is not None else y, "sum": y.sum(-1)}


def build():
    torch.manual_seed(0)
    return Keyworded(), (torch.randn(2, 4),), {"mask": torch.rand(2, 4), "scale": 3.0}
'''


@pytest.mark.parametrize("exporter", slow_but_one(EXPORTERS, fast="torchscript"))
def test_the_baseline_takes_keyword_inputs_at_their_dynamic_sizes(worker, model_file, exporter: str) -> None:
    """Keyword tensors and constants reach the plain export as the model's own call has them."""
    path = model_file("keyworded.py", KEYWORDED)
    options = {"exporter": exporter, "dynamic_axes": {"x": {0: "batch"}, "mask": {0: "batch"}}}
    result = worker.run(BaselineRequest(ModelRequest(str(path)), options))
    assert result.right, result.line()
    assert [s.label for s in result.sets] == ["example inputs", "batch=3", "batch=1"]


def test_the_guard_fires_where_a_project_fix_makes_fixport_wrong(cli, model_file, tmp_path: Path) -> None:
    path = model_file("tiny.py", TINY)
    project = tmp_path / "wrong.fixport.json"
    save_project(Project(model_path=str(path), mappings=[FixMapping(
        target_kind="aten::relu", template_id="test.wrong_relu", source=WRONG_RELU_FIX, edited=True)]), project)
    ran = cli("check", str(path), "--project", str(project), "--baseline")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith(WORSE_PREFIX) and "[mismatch]" in lines[0]  # the defect first
    assert any(line.startswith("plain torch.onnx.export: right at 1 size(s)") for line in lines)
    as_json = json.loads(cli("check", str(path), "--project", str(project), "--baseline", "--json").stdout)
    assert as_json["baseline"]["fixport_worse"].startswith(WORSE_PREFIX)


def test_a_sweep_row_carries_the_baseline_and_its_cache_key_says_so(worker, model_file, tmp_path: Path) -> None:
    path = model_file("tiny.py", TINY)
    settings = SweepSettings(("torchscript",), baseline=True)
    row = sweep_model(worker, path, "torchscript", settings)
    assert row.passed and row.baseline is not None and row.baseline.right and row.fixport_worse == ""
    assert "baseline" in row.seconds
    cache = SweepCache(tmp_path / "cache")
    assert cache.key(path, "torchscript", settings) != cache.key(path, "torchscript", SweepSettings(("torchscript",)))


def test_a_plain_export_that_fails_is_a_record_not_an_error(worker, model_file) -> None:
    """torch.onnx.export raising is the baseline's answer: a failed record with the first line."""
    path = model_file("takes_complex.py", '''
import torch


class Complex(torch.nn.Module):
    def forward(self, x):
        return torch.view_as_complex(x)


def build():
    return Complex(), (torch.randn(2, 3, 2),)
''')
    result = worker.run(BaselineRequest(ModelRequest(str(path))))
    assert result.verdict == BaselineVerdict.FAILED and not result.exported and result.export_error
