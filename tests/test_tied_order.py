"""Issue 49.6: a tie is not a mismatch.

Top-k over equal scores returns the tied boxes in another order in ONNX Runtime than in torch. A real
detector tail (quantised scores with exact ties -> topk -> gather boxes -> cat), exported with both
exporters, passes `check` and `compare` with a note that says so; permutations that are not ties
stay mismatches.
"""
from __future__ import annotations

import io
import json

import numpy as np
import onnxruntime as ort
import pytest
import torch

from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import compare_output_lists
from fixport.core.statistics.tied_order import find_tied_order

DETECTOR_TAIL_MODEL = """
    import torch
    from torch import nn


    class DetectorTail(nn.Module):
        \"\"\"A detector's post-processing inside the model: the top 6 boxes by score.\"\"\"

        def forward(self, boxes, logits):
            scores = torch.sigmoid(logits).round(decimals=1)  # quantised scores: exact ties
            top, index = scores.topk(6)
            return torch.cat([boxes[index], top[:, None]], dim=1)


    def build():
        torch.manual_seed(0)
        boxes = torch.rand(16, 4) * 100
        logits = torch.tensor([2.0, 2.0, 2.0, -1.0, 0.5, 0.5, 2.0, -3.0, 0.5, 1.0, 1.0, -1.0, 0.0, 2.0, 0.5, 1.0])
        return DetectorTail().eval(), (boxes, logits)
"""


def _detector(model_file):
    path = model_file("detector_tail.py", DETECTOR_TAIL_MODEL)
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the test's own model
    return path, *namespace["build"]()


def _onnx_runtime_output(model, inputs, dynamo: bool) -> np.ndarray:
    if dynamo:
        proto = torch.onnx.export(model, inputs, dynamo=True).model_proto
        data = proto.SerializeToString()
    else:
        buffer = io.BytesIO()
        torch.onnx.export(model, inputs, buffer, dynamo=False, opset_version=17)
        data = buffer.getvalue()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)})[0]


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_tied_boxes_in_another_order_pass_check_and_compare_with_a_note(cli, model_file, exporter: str) -> None:
    path, model, inputs = _detector(model_file)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    actual = _onnx_runtime_output(model, inputs, dynamo=exporter == "dynamo")
    # the premise, on this machine: ONNX Runtime's order of the tied boxes is not torch's
    assert not np.allclose(actual, expected, atol=1e-5)
    assert np.allclose(actual[np.lexsort(actual.T[::-1])], expected[np.lexsort(expected.T[::-1])], atol=1e-5)

    checked = cli("check", str(path), "--exporter", exporter)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "matches torch up to the order of tied elements" in checked.stdout
    assert "mismatch" not in checked.stdout.lower() and "aten::cat" not in checked.stdout

    compared = cli("compare", str(path), "--exporter", exporter, "--json")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    payload = json.loads(compared.stdout)
    (output,) = payload["outputs"]
    assert output["pass"] and output["max_abs"] < 1e-5 and "sort key out[:, 4]" in output["tied_order"]
    assert any(m.startswith("Input set 1: out matches torch up to the order of tied elements")
               for m in payload["messages"]), payload["messages"]
    assert payload["first_divergent"] is None
    topk = [node for node in payload["nodes"] if "topk" in node["source_kind"] and node["dtype"] == "int64"]
    assert topk and not topk[0]["exceeds"]  # its indices: a permutation among the tied values beside them


TOLERANCES = ToleranceTable()


def _tied(expected: list[tuple[str, np.ndarray]], actual: list[np.ndarray]):
    return find_tied_order(0, expected, actual, lambda values: TOLERANCES.for_dtype(str(values.dtype)))


SCORES = np.array([0.9, 0.9, 0.9, 0.7, 0.7, 0.2], dtype=np.float32)
BOXES = np.arange(24, dtype=np.float32).reshape(6, 4)


def test_rows_swapped_among_equal_scores_are_a_tie() -> None:
    expected = np.concatenate([BOXES, SCORES[:, None]], axis=1)
    order = [2, 0, 1, 4, 3, 5]
    tied = _tied([("out", expected)], [expected[order]])
    assert tied is not None and tied.axis == 0 and tied.moved == 5 and tied.key == "out[:, 4]"
    np.testing.assert_array_equal(tied.reordered, expected)
    stats = compare_output_lists([("out", expected)], [expected[order]], TOLERANCES)
    assert stats[0].passed and stats[0].max_abs == 0 and "up to the order of tied elements" in stats[0].tied_order


def test_a_key_in_another_output_and_a_leading_batch_axis() -> None:
    boxes, scores = np.stack([BOXES, BOXES + 100]), np.stack([SCORES, SCORES])
    swapped = boxes.copy()
    swapped[1, [0, 1]] = boxes[1, [1, 0]]
    tied = _tied([("boxes", boxes), ("scores", scores)], [swapped, scores])
    assert tied is not None and tied.axis == 1 and tied.moved == 2 and tied.key == "scores"


@pytest.mark.parametrize("order", [[5, 4, 3, 2, 1, 0], [3, 1, 2, 0, 4, 5]], ids=["reversed", "across scores"])
def test_a_permutation_across_different_scores_stays_a_mismatch(order: list[int]) -> None:
    expected = np.concatenate([BOXES, SCORES[:, None]], axis=1)
    assert _tied([("out", expected)], [expected[order]]) is None
    assert not compare_output_lists([("out", expected)], [expected[order]], TOLERANCES)[0].passed


def test_no_sort_key_no_tie() -> None:
    """Rows in another order with no sorted key beside them (a constant label is no sort key)."""
    labels = np.zeros((6, 1), dtype=np.float32)
    expected = np.concatenate([BOXES, labels], axis=1)
    assert _tied([("out", expected)], [expected[[1, 0, 2, 3, 4, 5]]]) is None
    different = expected[[1, 0, 2, 3, 4, 5]].copy()
    different[0, 0] += 1.0  # and values that differ are no permutation at all
    assert _tied([("out", np.concatenate([BOXES, SCORES[:, None]], axis=1))], [different]) is None


def test_the_window_marks_a_tied_pass_as_the_command_line_does() -> None:
    from fixport.cli.compare import _output_row
    from fixport.gui.compare_dock import _verdict

    expected = np.concatenate([BOXES, SCORES[:, None]], axis=1)
    swapped = expected[[1, 0, 2, 3, 4, 5]]
    tied, plain = compare_output_lists([("out", expected), ("same", expected)], [swapped, expected], TOLERANCES)
    assert _verdict(tied) == "pass (up to tied order)" and _output_row(tied).endswith("pass (up to tied order)")
    assert _verdict(plain) == "pass" and _output_row(plain).endswith("pass")
