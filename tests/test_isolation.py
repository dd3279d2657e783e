"""Trial exports in a forked child: a crash inside torch costs the candidate, not the worker."""
from __future__ import annotations

import io
import os

import pytest
import torch

from fixport.core.fixing.isolation import TrialCrashed, run_isolated


class Empty(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu(x)


def _export_with_a_reshape_torch_cannot_infer() -> bytes:
    """Reshape of an empty tensor to (0, -1): the exporter's shape inference divides by zero."""
    def symbolic(g, x):
        return g.op("Reshape", x, g.op("Constant", value_t=torch.tensor([0, -1])))

    torch.onnx.register_custom_op_symbolic("aten::relu", symbolic, 17)
    try:
        buffer = io.BytesIO()
        torch.onnx.export(Empty(), (torch.ones(0, 8, 8),), buffer, opset_version=17, dynamo=False)
        return buffer.getvalue()
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::relu", 17)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="isolation needs fork")
def test_a_trial_that_crashes_torch_is_reported_and_this_process_lives_on() -> None:
    with pytest.raises(TrialCrashed, match="SIGFPE"):
        run_isolated(_export_with_a_reshape_torch_cannot_infer)
    assert run_isolated(lambda: torch.ones(3).sum().item()) == 3.0  # and the next trial runs


def test_results_and_exceptions_come_back_as_they_are() -> None:
    assert run_isolated(lambda: {"nodes": [1, 2]}) == {"nodes": [1, 2]}
    with pytest.raises(ValueError, match="bad template"):
        run_isolated(lambda: (_ for _ in ()).throw(ValueError("bad template")))
