"""Per-node analysis fetches the ONNX side in slices when the values are big, with the same result."""
from __future__ import annotations

import pytest

import fixport.core.comparison.intermediates as intermediates
from fixport.core.comparison.compare_job import compare
from fixport.core.model.compare_result import NodeAnalysis
from fixport.core.model.requests import CompareRequest
from fixport.core.model.results import ModelRequest
from tests.conftest import REPO

ALL_NODE_VALUES = intermediates.all_node_values


def _analysis_and_runs(monkeypatch: pytest.MonkeyPatch, budget: int) -> tuple[NodeAnalysis, list[int]]:
    """The node analysis of the example whose numpy autograd.Function fails on a second input,
    with ``budget`` bytes of values per ONNX Runtime run, and the count of values each run fetched."""
    monkeypatch.setattr(intermediates, "VALUES_PER_RUN_BYTES", budget)
    fetched: list[int] = []

    def counting(model, inputs, input_names, session_factory, only=None):
        fetched.append(len(only))
        return ALL_NODE_VALUES(model, inputs, input_names, session_factory, only)

    monkeypatch.setattr(intermediates, "all_node_values", counting)
    result = compare(CompareRequest(ModelRequest(str(REPO / "examples" / "autograd_numpy.py")), runs=2))
    assert result.node_analysis is not None
    return result.node_analysis, fetched


def test_values_fetched_one_slice_at_a_time_give_the_same_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    whole, whole_runs = _analysis_and_runs(monkeypatch, intermediates.VALUES_PER_RUN_BYTES)
    sliced, sliced_runs = _analysis_and_runs(monkeypatch, 1)  # every value a slice of its own
    compared = len(whole.nodes)
    assert compared >= 2
    assert whole_runs[0] == compared and len(whole_runs) == 2  # all at once, then the groups re-run alone
    assert sliced_runs[:compared] == [1] * compared and len(sliced_runs) == compared + 1
    assert whole.first_divergent is not None and whole.first_divergent.introduced_max_abs > 0.1
    assert [(n.onnx_node, n.max_abs, n.exceeds, n.inputs_exceed, n.introduced_max_abs) for n in sliced.nodes] == \
        [(n.onnx_node, n.max_abs, n.exceeds, n.inputs_exceed, n.introduced_max_abs) for n in whole.nodes]
    assert sliced.first_divergent.onnx_node == whole.first_divergent.onnx_node
