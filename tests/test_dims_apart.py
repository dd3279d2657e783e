"""Distinct declared dims that share their traced size (a square image's height and width) are also
checked apart: moving them together tries square sizes only, where a graph right for square inputs
alone passes (torchvision FCOS's baked ``int(64 / min(h, w) * w)``)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fixport.core.foundation.other_sizes import other_size_inputs
from fixport.core.records.requests import AnalyzeRequest
from fixport.core.records.results import ModelRequest

# resizes to height 16 keeping the aspect ratio; int() bakes the width, 16 at every square size
ASPECT_RESIZE_MODEL = '''
import torch
import torch.nn.functional as F

FIXPORT_EXAMPLE = {"opset": 17, "export_options": {"input_names": ["image"],
                                                   "dynamic_axes": {"image": {2: "height", 3: "width"}}}}


class AspectResize(torch.nn.Module):
    def forward(self, image):
        height, width = image.shape[-2:]
        return F.interpolate(image, size=(16, int(16 * width / height)), mode="nearest")


def build():
    torch.manual_seed(0)
    return AspectResize().eval(), (torch.randn(1, 3, 24, 24),)
'''
APART = "height=36, width=24 (height and width apart, equal in the example)"


def _shapes(sets: list[tuple[str, tuple[torch.Tensor, ...]]]) -> list[list[tuple[int, ...]]]:
    return [[tuple(t.shape) for t in inputs] for _, inputs in sets]


def test_distinct_dims_of_one_traced_size_are_also_tried_apart_in_one_more_set() -> None:
    image = (torch.randn(1, 3, 24, 24),)
    sets = other_size_inputs({"height": [(0, 2)], "width": [(0, 3)]}, image)
    assert _shapes(sets) == [[(1, 3, 36, 36)], [(1, 3, 17, 17)], [(1, 3, 36, 24)]]
    assert sets[-1][0] == APART


def test_dims_of_one_name_still_move_together_and_unequal_dims_add_no_set() -> None:
    image = (torch.randn(1, 3, 24, 24),)
    assert _shapes(other_size_inputs({"side": [(0, 2), (0, 3)]}, image)) == [[(1, 3, 36, 36)], [(1, 3, 17, 17)]]
    tokens = (torch.zeros(2, 8, dtype=torch.long),)
    assert len(other_size_inputs({"batch": [(0, 0)], "seq": [(0, 1)]}, tokens)) == 2


def test_three_dims_of_one_size_all_differ_and_each_group_is_named() -> None:
    volume = (torch.randn(2, 2, 8, 8, 8),)
    dims = {"batch": [(0, 0)], "channels": [(0, 1)], "depth": [(0, 2)], "height": [(0, 3)], "width": [(0, 4)]}
    label, (inputs,) = other_size_inputs(dims, volume)[-1]
    assert tuple(inputs.shape) == (3, 2, 12, 8, 5)  # grown, kept, shrunk
    assert label.endswith("(batch and channels; depth and height and width apart, equal in the example)")


def test_the_apart_set_keeps_the_relations_of_a_kv_cache_mask() -> None:
    # seq = past = 4; the mask covers both ("total" their sum) and "past_plus_1" is one more than past
    inputs = (torch.zeros(1, 4, dtype=torch.long), torch.randn(1, 2, 4, 8), torch.ones(1, 8), torch.ones(1, 5))
    dims = {"seq": [(0, 1)], "past": [(1, 2)], "total": [(2, 1)], "past_plus_1": [(3, 1)]}
    label, apart = other_size_inputs(dims, inputs)[-1]
    assert [tuple(t.shape) for t in apart] == [(1, 6), (1, 2, 4, 8), (1, 10), (1, 5)]
    assert label == "seq=6, past=4, total=10, past_plus_1=5 (seq and past apart, equal in the example)"


def test_check_names_a_graph_right_for_square_inputs_only(worker, tmp_path: Path) -> None:
    path = tmp_path / "aspect.py"
    path.write_text(ASPECT_RESIZE_MODEL, encoding="utf-8")
    result = worker.run(AnalyzeRequest(ModelRequest(str(path))))
    (problem,) = result.unsupported
    assert problem.reason == "shape_specialised" and problem.kind == "aten::upsample_nearest2d"
    # the square sizes pass: only the apart set shows it
    assert f"At {APART}" in problem.message and "torch [1, 3, 16, 10], ONNX [1, 3, 16, 16]" in problem.message
    assert "aspect.py:12" in problem.message  # the int() that baked the width
    assert any(f"height=36, width=36; height=17, width=17; {APART}" in note for note in result.notes)


@pytest.mark.slow
def test_the_dynamo_export_of_a_square_only_graph_is_named_too(worker, tmp_path: Path) -> None:
    path = tmp_path / "aspect.py"
    path.write_text(ASPECT_RESIZE_MODEL, encoding="utf-8")
    result = worker.run(AnalyzeRequest(ModelRequest(str(path)), {"exporter": "dynamo"}))
    (problem,) = result.unsupported
    assert problem.reason == "shape_specialised" and f"At {APART}" in problem.message


def test_the_compare_dock_lists_the_apart_set_and_shows_where_it_fails(qtbot, window, tmp_path: Path) -> None:
    from tests.test_gui_flow import run_job

    path = tmp_path / "aspect.py"
    path.write_text(ASPECT_RESIZE_MODEL, encoding="utf-8")
    run_job(qtbot, window, lambda: window.open_path(path))
    assert [problem.reason for problem in window.workbench.analysis.unsupported] == ["shape_specialised"]
    run_job(qtbot, window, window.actions["compare"].trigger)
    dock = window.compare
    labels = [dock.run_choice.itemText(i) for i in range(dock.run_choice.count())]
    assert labels[-3:] == ["height=36, width=36", "height=17, width=17", APART], labels
    dock.run_choice.setCurrentIndex(labels.index("height=36, width=36"))  # square: right
    assert dock.table.item(0, 9).text() == "pass"
    dock.run_choice.setCurrentIndex(labels.index(APART))
    assert dock.table.item(0, 9).text().startswith("FAIL"), dock.table.item(0, 9).text()


@pytest.mark.slow  # the fix script in a new process
def test_the_fix_script_checks_the_apart_set_too(tmp_path: Path) -> None:
    from tests.test_fix_script_shapes import _run, _script

    script, _ = _script(tmp_path, ASPECT_RESIZE_MODEL, {})
    ran = _run(script, "-o", "aspect.onnx")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "checked at height=36, width=36 (image=1x3x36x36): max abs diff" in ran.stdout, ran.stdout
    assert (f"checked at {APART} (image=1x3x36x24): MISMATCH out: shape differs: torch [1, 3, 16, 10], "
            "ONNX [1, 3, 16, 16]") in ran.stdout, ran.stdout
