"""Per-node analysis runs both sides slice by slice when the values are big, with the same result."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import fixport.core.comparison.intermediates as intermediates
from fixport.core.comparison.compare_job import compare
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.records.compare_result import NodeAnalysis
from fixport.core.records.requests import CompareRequest
from fixport.core.records.results import ModelRequest
from fixport.examples.catalog import example_path

ALL_NODE_VALUES = intermediates.all_node_values


# (example, options, input sets): a numpy autograd.Function that fails on a second input
# (TorchScript), and a max whose NaN handling differs (dynamo)
DIVERGING = [("autograd_numpy", {}, 2),
             pytest.param("nan_gap_max_dynamo", {"exporter": "dynamo"}, 1, marks=pytest.mark.slow)]


def _analysis_and_runs(monkeypatch: pytest.MonkeyPatch, budget: int, example: str, options: dict,
                       runs: int) -> tuple[NodeAnalysis, list[int]]:
    """The node analysis of ``example`` with ``budget`` bytes of values per ONNX Runtime run, and
    the count of values each run fetched."""
    monkeypatch.setattr(intermediates, "VALUES_PER_RUN_BYTES", budget)
    fetched: list[int] = []

    def counting(model, inputs, input_names, session_factory, only=None):
        fetched.append(None if only is None else len(only))
        return ALL_NODE_VALUES(model, inputs, input_names, session_factory, only)

    monkeypatch.setattr(intermediates, "all_node_values", counting)
    result = compare(CompareRequest(ModelRequest(str(example_path(example))), dict(options), runs=runs))
    assert result.node_analysis is not None
    return result.node_analysis, fetched


@pytest.mark.parametrize("example, options, runs", DIVERGING)
def test_values_compared_one_slice_at_a_time_give_the_same_analysis(monkeypatch: pytest.MonkeyPatch, example: str,
                                                                    options: dict, runs: int) -> None:
    whole, whole_runs = _analysis_and_runs(monkeypatch, intermediates.VALUES_PER_RUN_BYTES, example, options, runs)
    sliced, sliced_runs = _analysis_and_runs(monkeypatch, 1, example, options, runs)  # a slice per value
    compared = len(whole.nodes)
    assert compared >= 2
    assert whole_runs == [None]  # every value in one run, kept for the groups re-run alone
    assert sliced_runs[:compared] == [1] * compared and len(sliced_runs) == compared + 1
    assert whole.first_divergent is not None and whole.first_divergent.introduced_exceeds
    assert [(n.onnx_node, n.max_abs, n.exceeds, n.inputs_exceed, n.introduced_max_abs) for n in sliced.nodes] == \
        [(n.onnx_node, n.max_abs, n.exceeds, n.inputs_exceed, n.introduced_max_abs) for n in whole.nodes]
    assert sliced.first_divergent.onnx_node == whole.first_divergent.onnx_node


def _weights_of(size: int) -> OnnxModel:
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[size // 4],
                              data_location=onnx.TensorProto.EXTERNAL)
    weight.external_data.extend([onnx.StringStringEntryProto(key="location", value="w.data"),
                                 onnx.StringStringEntryProto(key="length", value=str(size))])
    graph = onnx.helper.make_graph([], "weights", [], [], initializer=[weight])
    return OnnxModel(onnx.helper.make_model(graph), Path("."))


def test_values_per_run_follow_the_weights_within_bounds() -> None:
    """A quarter of the weights' size: a float16 ViT-B (173 MB) runs 43 MB slices, a tiny model
    the floor, a real-size LM the ceiling."""
    mb = 1024**2
    assert intermediates.values_per_run(_weights_of(173 * mb)) == 173 * mb // 4
    assert intermediates.values_per_run(_weights_of(mb)) == intermediates.VALUES_PER_RUN_FLOOR_BYTES
    assert intermediates.values_per_run(_weights_of(2000 * mb)) == intermediates.VALUES_PER_RUN_BYTES


@pytest.mark.parametrize("on_disk", [True, False])
def test_a_big_model_whose_outputs_all_match_is_not_exported_again_node_by_node(monkeypatch: pytest.MonkeyPatch,
                                                                                 model_file, on_disk: bool) -> None:
    import fixport.core.onnx_io.onnx_model as onnx_model
    from fixport.core.comparison.compare_job import MATCHED_AT_SIZE_NOTE

    if on_disk:  # as big as a model whose weights wait on disk
        monkeypatch.setattr(onnx_model, "WEIGHTS_ON_DISK_ABOVE_BYTES", 0)
    path = model_file("linear.py", """
        import torch

        def build():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), (torch.randn(2, 8),)
    """)
    result = compare(CompareRequest(ModelRequest(str(path)), runs=2))
    assert all(output.passed for output in result.outputs)
    assert (result.node_analysis is None) is on_disk
    assert (MATCHED_AT_SIZE_NOTE in result.messages) is on_disk
