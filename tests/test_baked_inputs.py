"""An input the export does not follow is a problem: one the trace drops, or whose values it bakes
(read with .tolist()/int()/.item()). check names the input and the line that read it, tries other
values in torch and ONNX Runtime, and compare never calls such an export a PASS."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fixport.core.checks.value_check import other_values
from fixport.core.records.requests import AnalyzeRequest, CompareRequest
from fixport.core.records.results import ModelRequest

MODEL = '''import torch

FIXPORT_EXAMPLE = {{"opset": 17}}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.embed = torch.nn.Embedding(8, 4)

{forward}

def build():
    torch.manual_seed(0)
    return Model().eval(), {inputs}
'''
FORWARD_LINE = 13  # the first line of {forward}'s body in MODEL

GRIDS = ('''    def forward(self, x, grid):
        out, start = [], 0
        for h, w in grid.tolist():
            chunk = x[start:start + h * w].view(h, w, -1)
            out.append(self.proj(chunk.mean(dim=1)).sum(0, keepdim=True) * h)
            start += h * w
        return torch.cat(out)
''', "(torch.randn(12, 4), torch.tensor([[2, 3], [3, 2]]))")
VIEW_BY_INT = ('''    def forward(self, x, sizes):
        return x.view(int(sizes[0]), -1).sum(1) * sizes.sum()
''', "(torch.randn(12), torch.tensor([3, 4]))")
LENGTH_MASK = ('''    def forward(self, x, length):
        mask = torch.arange(x.shape[1]) < int(length)
        return self.proj(x * mask)
''', "(torch.randn(2, 4), torch.tensor(3))")

# Inputs whose values reach the export as tensors, or that the model does not use: nothing to flag.
USED_AS_TENSORS = {
    "token ids": ('''    def forward(self, x, ids):
        return self.proj(x) + self.embed(ids).sum(1)
''', "(torch.randn(2, 4), torch.tensor([[1, 2, 3], [4, 5, 6]]))"),
    "an unused input": ('''    def forward(self, x, unused):
        return self.proj(x)
''', "(torch.randn(2, 4), torch.tensor([3, 1]))"),
    "an input used for its shape": ('''    def forward(self, x, like):
        return self.proj(x) + torch.zeros(like.shape)
''', "(torch.randn(2, 4), torch.randn(2, 4))"),
    "an input used in part": ('''    def forward(self, x, mask):
        return self.proj(x) * mask[:, :1]
''', "(torch.randn(2, 4), torch.tensor([[1, 0, 1], [0, 1, 1]]))"),
}


def _model(tmp_path: Path, case: tuple[str, str], name: str = "model.py") -> Path:
    forward, inputs = case
    path = tmp_path / name
    path.write_text(MODEL.format(forward=forward, inputs=inputs), encoding="utf-8")
    return path


def test_check_names_an_input_the_trace_dropped_and_the_line_that_read_it(cli, tmp_path: Path) -> None:
    shown = cli("check", str(_model(tmp_path, GRIDS, "grids.py")))
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "[baked_input]" in shown.stdout, shown.stdout
    text = " ".join(shown.stdout.split())
    assert "Input grid is not an input of the ONNX model" in text, text
    assert f"forward() reads its values at grids.py:{FORWARD_LINE + 1}" in text, text
    assert "differs from torch's" in text and "--exporter dynamo" in text, text
    assert "Traceback" not in shown.stderr


@pytest.mark.slow
def test_the_dynamo_exporter_keeps_the_grid_an_input_and_is_clean(worker, tmp_path: Path) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(_model(tmp_path, GRIDS))), {"exporter": "dynamo"}))
    assert result.unsupported == []
    assert any(n.startswith("Input grid: its values are read at model.py:") and "also matched torch at grid=" in n
               for n in result.notes), result.notes


def test_values_baked_into_a_kept_input_are_caught_at_other_values(worker, tmp_path: Path) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(_model(tmp_path, VIEW_BY_INT)))))
    (problem,) = result.unsupported
    assert problem.reason == "baked_input" and problem.source == f"model.py:{FORWARD_LINE}"
    assert problem.instance in result.source_graph.node_by_id  # the Problems list selects the traced node
    assert ("Input sizes is an input of the ONNX model, but the trace turned values computed from it into "
            "constants" in problem.message)
    assert "at sizes=[4, 3] output out differs from torch's" in problem.message, problem.message


@pytest.mark.slow
def test_a_mask_built_from_a_dropped_length_is_caught(worker, tmp_path: Path) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(_model(tmp_path, LENGTH_MASK)))))
    (problem,) = result.unsupported
    assert problem.reason == "baked_input"
    assert "Input length is not an input of the ONNX model" in problem.message
    assert "at length=4 output out differs from torch's" in problem.message, problem.message
    dynamo = worker.run(AnalyzeRequest(ModelRequest(str(_model(tmp_path, LENGTH_MASK))), {"exporter": "dynamo"}))
    assert dynamo.unsupported == []  # torch.export keeps int(length) symbolic


@pytest.mark.parametrize("case", sorted(USED_AS_TENSORS))
def test_inputs_the_export_follows_are_not_flagged(worker, tmp_path: Path, case: str) -> None:
    result = worker.run(AnalyzeRequest(ModelRequest(str(_model(tmp_path, USED_AS_TENSORS[case])))))
    assert result.unsupported == [], [p.message for p in result.unsupported]


def test_an_input_the_export_named_itself_is_not_taken_for_a_missing_one(worker, tmp_path: Path) -> None:
    path = _model(tmp_path, USED_AS_TENSORS["token ids"])
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), {"input_names": ["x"]}))  # ids: named by torch
    assert result.unsupported == [] and not any("not an input" in note for note in result.notes), result.notes


def test_compare_does_not_pass_an_export_that_drops_an_input(worker, tmp_path: Path) -> None:
    result = worker.run(CompareRequest(ModelRequest(str(_model(tmp_path, GRIDS)))))
    assert not result.passed
    (baked,) = result.baked_inputs
    assert baked.startswith("Input grid is not an input of the ONNX model"), baked
    assert "grid=[[3, 2], [2, 3]]" in result.run_labels
    assert result.to_json()["pass"] is False and result.to_json()["baked_inputs"] == [baked]


QWEN_VISION = '''import torch
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel

FIXPORT_EXAMPLE = {"opset": 17}


class Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen2_5_VLVisionConfig(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32,
                                        patch_size=4, spatial_merge_size=2, temporal_patch_size=2, window_size=16,
                                        fullatt_block_indexes=[1], in_channels=3)
        self.model = Qwen2_5_VisionTransformerPretrainedModel._from_config(config, attn_implementation="eager")

    def forward(self, pixel_values, grid_thw):
        return self.model(pixel_values, grid_thw=grid_thw).last_hidden_state


def build():
    torch.manual_seed(0)
    return Tower().eval(), (torch.randn(24, 3 * 2 * 4 * 4), torch.tensor([[1, 4, 6]]))
'''


@pytest.mark.slow
def test_a_real_vision_tower_that_reads_its_grid_with_tolist_is_flagged(worker, tmp_path: Path) -> None:
    """transformers' Qwen2.5-VL vision tower (tiny config, random weights): the trace drops grid_thw."""
    path = tmp_path / "qwen_vision.py"
    path.write_text(QWEN_VISION, encoding="utf-8")
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    (problem,) = result.unsupported
    assert problem.reason == "baked_input" and problem.instance in result.source_graph.node_by_id
    assert problem.message.startswith("Input grid_thw is not an input of the ONNX model; forward() reads its values "
                                      "at vision_utils.py:"), problem.message
    assert "at grid_thw=[[1, 6, 4]] output out differs from torch's" in problem.message, problem.message


def test_other_values_swap_a_grids_axes_first_and_keep_shape_and_dtype() -> None:
    grid = torch.tensor([[1, 4, 6]])
    tried = [value.tolist() for value, _ in other_values(grid)]
    assert tried[:3] == [[[1, 6, 4]], [[6, 4, 1]], [[4, 1, 6]]]  # height and width swapped first
    assert all(value.shape == grid.shape and value.dtype == grid.dtype for value, _ in other_values(grid))
    assert [value.item() for value, _ in other_values(torch.tensor(3))][:3] == [4, 2, 6]
    assert list(other_values(torch.zeros(0, dtype=torch.int64))) == []


def test_the_window_lists_the_baked_input_and_says_what_to_do(qtbot, window, tmp_path: Path) -> None:
    from tests.test_gui_flow import click_problem, run_job

    run_job(qtbot, window, lambda: window.open_path(_model(tmp_path, GRIDS)))
    tree = window.problems.tree
    assert "the export does not follow this input's values" in tree.topLevelItem(0).text(0)
    click_problem(qtbot, window, 0)
    shown = " ".join(window.inspector.browser.toPlainText().split())
    assert "Input grid is not an input of the ONNX model" in shown and "--exporter dynamo" in shown, shown
    assert "No template fixes this" in window.template.heading.text()
