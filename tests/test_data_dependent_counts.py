"""No silent PASS when a count depends on the data (issues 44.3 and 49.5).

A keypoint detector keeps the scores above a threshold (nonzero: a count the image's values
decide) and a graph pooling sums nodes into ``int(batch.max()) + 1`` graphs. Traced, both
hold that count as a constant: the export matches torch at the example values and fails in ONNX
Runtime at others. ``compare`` tries random sets by default and reports a set ONNX Runtime
cannot run as a failing one (exit 1, never 2); ``check`` tries other values of an image whose
keypoint count the trace baked, and other sizes draw a batch vector's values from a wider range.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from fixport.core.checks.value_reads import input_value_reads, integer_inputs_read
from fixport.core.foundation.other_sizes import random_like
from fixport.core.records.requests import AnalyzeRequest, CompareRequest
from fixport.core.records.results import ModelRequest

KEYPOINTS = '''import torch

FIXPORT_EXAMPLE = {"opset": 17}


class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Conv2d(1, 1, 1)

    def forward(self, image):
        scores = self.head(image).flatten()
        keep = torch.nonzero(scores > 0.0)[:, 0]
        count = len(keep)
        return scores[keep].unsqueeze(1).expand(count, 2)


def build():
    with torch.no_grad():
        model = Detector().eval()
        model.head.weight.fill_(1.0)
        model.head.bias.zero_()
    image = torch.zeros(1, 1, 4, 4)
    image[0, 0, 0, :2] = 1.0  # two keypoints; the random images of seeds 1, 2 and 7 have 4, 4 and 8
    return model, (image,)
'''
COUNT_LINE = "keypoints.py:14"  # count = len(keep)

# A library that silences the tracer's warnings (so nothing flags the read at the example size):
# only other values of batch at other sizes show the graph count the trace baked.
GRAPHS = '''import warnings

import torch

FIXPORT_EXAMPLE = {"opset": 18}


def graph_count(batch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return int(batch.max()) + 1


class GraphPool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 3)

    def forward(self, x, batch):
        out = torch.zeros(graph_count(batch), 3)
        return out.scatter_add(0, batch.unsqueeze(1).expand(-1, 3), self.proj(x))


def build():
    torch.manual_seed(0)
    return GraphPool().eval(), (torch.randn(14, 4), torch.tensor([0] * 5 + [1] * 5 + [2] * 4))
'''
NODES = {"x": {"0": "num_nodes"}, "batch": {"0": "num_nodes"}}


class _Keypoints(torch.nn.Module):
    def forward(self, image: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        keep = torch.nonzero(image.flatten() > 0)[:, 0]
        picked = image.flatten()[image.flatten() > 0]
        rows = keep.shape[0]
        return torch.ones(rows, 2) * picked.numel() + ids.sum()


def test_a_size_computed_from_an_input_s_values_is_a_read_of_them() -> None:
    reads = input_value_reads(_Keypoints(), [torch.randn(3, 3), torch.tensor([1, 2])])
    assert list(reads) == [0]  # ids are only summed as a tensor
    (line,) = {line.rsplit(":", 1)[0] for line in reads[0]}
    assert line == Path(__file__).name and len(reads[0]) == 2, reads  # keep.shape[0] and picked.numel()


def test_integer_inputs_read_into_python_are_named_and_drawn_wider_sorted() -> None:
    namespace: dict = {}
    exec(compile(GRAPHS, "graphs.py", "exec"), namespace)
    model, (x, batch) = namespace["build"]()
    assert integer_inputs_read(model, [x, batch], ["x", "batch"]) == {1: "batch"}
    wide = random_like(batch, [21], torch.Generator().manual_seed(7), wider=True)
    assert int(wide.max()) == 4 and int(wide.min()) == 0 and bool((wide.diff() >= 0).all()), wide
    same = random_like(batch, [21], torch.Generator().manual_seed(7))
    assert int(same.max()) <= 2


def test_compare_reports_a_set_onnx_runtime_cannot_run_as_a_failure(cli, model_file) -> None:
    path = model_file("keypoints.py", KEYPOINTS)
    shown = cli("compare", str(path), "--no-node-analysis", "--latency-runs", "0", "--json")
    assert shown.returncode == 1, shown.stdout + shown.stderr
    result = json.loads(shown.stdout)
    # the example, two random sets by default, and the other image the value check tried
    assert result["pass"] is False and result["runs"] == 4
    (output,) = result["outputs"]
    assert output["problem"].startswith("ONNX Runtime fails "), output
    assert "invalid expand shape" in output["problem"], output
    sets = result["input_sets"]
    assert [s["label"] for s in sets[:3]] == ["example inputs", "random, seed 1", "random, seed 2"], sets
    assert [s["pass"] for s in sets] == [True, False, False, False], sets
    assert sets[1]["problems"][0].startswith("ONNX Runtime fails on input set 2: "), sets
    assert any(baked.startswith("Input image is an input of the ONNX model, but the trace turned values computed "
                                "from it into constants") for baked in result["baked_inputs"]), result


def test_compare_skips_the_node_analysis_of_a_set_onnx_runtime_cannot_run(worker, model_file) -> None:
    result = worker.run(CompareRequest(ModelRequest(str(model_file("keypoints.py", KEYPOINTS))), latency_runs=0))
    assert not result.passed and result.node_analysis is None
    assert any(m.startswith("Per-node analysis skipped: ONNX Runtime cannot run input set(s)") for m in result.messages)
    assert not any(m.startswith("Per-node analysis failed") for m in result.messages), result.messages


def test_check_tries_other_values_of_an_image_whose_keypoint_count_the_trace_baked(worker, model_file) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(model_file("keypoints.py", KEYPOINTS)))))
    (problem,) = result.unsupported
    assert problem.reason == "baked_input" and problem.source == COUNT_LINE, problem
    assert f"forward() reads its values at {COUNT_LINE}" in problem.message
    assert "ONNX Runtime fails" in problem.message and "len()" in problem.message, problem.message


def test_check_at_other_sizes_varies_a_graph_count_read_from_the_batch_vector(worker, model_file) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(model_file("graphs.py", GRAPHS))), {"dynamic_axes": NODES}))
    (problem,) = result.unsupported
    assert problem.reason == "shape_specialised", problem
    assert problem.message.startswith("At num_nodes=21, batch values 0..4 (inputs 21x4, 21), ONNX Runtime fails "
                                      "there"), problem.message
    assert "batch took values beyond the example's there" in problem.message


def test_compare_varies_the_graph_count_in_its_third_set(worker, model_file) -> None:
    result = worker.run(CompareRequest(ModelRequest(str(model_file("graphs.py", GRAPHS))), analyze_nodes=False,
                                       latency_runs=0))
    assert not result.passed
    assert result.run_labels == ["example inputs", "random, seed 1", "random, seed 2, batch values 0..4"]
    assert [all(s.passed for s in stats) for stats in result.per_run] == [True, True, False]


def test_where_torch_refuses_wider_values_the_check_says_the_count_was_not_varied(worker, model_file) -> None:
    picky = GRAPHS.replace("    def forward(self, x, batch):\n", "    def forward(self, x, batch):\n"
                           "        if int(batch.max()) > 2:\n"
                           "            raise ValueError('at most three graphs')\n")
    model = ModelRequest(str(model_file("picky.py", picky)))
    checked = worker.run(AnalyzeRequest(model, {"dynamic_axes": NODES}))
    assert checked.other_sizes_checked == ["num_nodes=21", "num_nodes=9"], checked.other_sizes_checked
    assert any(note.startswith("At num_nodes=21, batch values 0..4 torch itself fails (ValueError: at most three "
                               "graphs), so it was checked at num_nodes=21 with every input's values in the "
                               "example's range: a count computed from an input's values was not varied there.")
               for note in checked.notes), checked.notes
    compared = worker.run(CompareRequest(model, analyze_nodes=False, latency_runs=0))
    assert compared.run_labels[2] == "random, seed 2", compared.run_labels  # the example's range
    assert any("was not varied there" in m for m in compared.messages), compared.messages
