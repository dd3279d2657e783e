"""The line that stops torch.export is the line reported (issue 33).

As in Qwen2.5-VL's vision tower: a helper in another file turns a tensor's value into a Python int
(``int(...)``), where non-strict torch.export stops on a data-dependent guard. draft_export then
captures on, sized by the example's values, and torch.onnx's own passes fail on its graph at a
later op (cumsum of a repeat_interleave: real-tensor propagation). Fixport blamed that op as "not
your model"; the report must name the helper's line, with advice that fits a data-dependent value.
"""
from __future__ import annotations

import pytest

from fixport.core.records.requests import AnalyzeRequest, AutoFixRequest
from fixport.core.records.results import ModelRequest
from fixport.core.words.problems import UnsupportedNode
from fixport.core.words.vocabulary import ProblemReason

# torch.export (non-strict) stops at line 5: the int() the branch below it needs to be a known number.
PATCH_GRID = '''import torch


def tokens_kept(grid, x):
    n = int(grid.prod(-1).sum())
    if n > x.shape[0]:
        n = x.shape[0]
    return x[:n]
'''
TOWER = '''
import torch
from torch import nn

from patch_grid_helpers import tokens_kept


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, grid):
        seqlens = torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0]).cumsum(0, dtype=torch.int32)
        return self.proj(tokens_kept(grid, x)) * seqlens[-1]


def build():
    torch.manual_seed(0)
    return Tower().eval(), (torch.randn(16, 4), torch.tensor([[1, 4, 4]]))
'''
DYNAMO = {"exporter": "dynamo"}


def _tower(model_file) -> ModelRequest:
    model_file("patch_grid_helpers.py", PATCH_GRID)
    return ModelRequest(str(model_file("tower.py", TOWER)))


@pytest.mark.slow
def test_the_helper_line_torch_export_stopped_on_is_reported_first(worker, model_file) -> None:
    result = worker.run(AnalyzeRequest(_tower(model_file), options=DYNAMO))
    first = result.unsupported[0]
    assert (first.reason, first.source) == (ProblemReason.CAPTURE_FAILED, "patch_grid_helpers.py:5"), \
        [(p.kind, p.source, p.message[:120]) for p in result.unsupported]
    assert "n = int(grid.prod(-1).sum())" in first.message and "torch._check" in first.message
    # the op torch.onnx's pass failed on, in draft_export's graph, is not the cause
    assert all(p.reason == ProblemReason.CAPTURE_FAILED for p in result.unsupported)
    assert not any("not your model" in p.message or "template" in p.message for p in result.unsupported)


@pytest.mark.slow
def test_fix_auto_keeps_the_capture_failure_as_what_is_left(worker, model_file) -> None:
    """No template fixes a capture failure: it is left, at its line, for the user's code change."""
    result = worker.run(AutoFixRequest(_tower(model_file), dict(DYNAMO)))
    assert result.choices == [] and result.after.unsupported[0].source == "patch_grid_helpers.py:5"


def _capture_failure(source: str, kind: str = "torch.export::data_dependent_error") -> UnsupportedNode:
    return UnsupportedNode(kind=kind, instance=source, reason=ProblemReason.CAPTURE_FAILED,
                           message=f"at {source}", scope="", source=source)


def test_the_stopping_line_leads_draft_exports_report() -> None:
    from fixport.core.exporters.torch_export.capture_failures import stopping_line_first

    unplaced = _capture_failure("", "torch.export::mismatched_fake_kernel")
    later, there = _capture_failure("model.py:30"), _capture_failure("utils.py:7")
    stopped = _capture_failure("utils.py:7", "torch.export::GuardOnDataDependentSymNode")
    ordered = stopping_line_first(stopped, [unplaced, later, there])
    # the report's failure at that line leads, in torch's own words, under the report's kind
    assert [(p.source, p.kind) for p in ordered] == [("utils.py:7", "torch.export::data_dependent_error"),
                                                     ("", unplaced.kind), ("model.py:30", later.kind)]
    assert stopping_line_first(stopped, [later])[0] is stopped  # a line the report missed is added first
    assert stopping_line_first(stopped, []) == [stopped]
