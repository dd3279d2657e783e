"""compare's latency timing on a real-size model: a run takes seconds there, so timed runs stop once
they pass a budget (at least one is timed), and a session that ran the inputs already is not warmed up."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from fixport.core.onnx_io.runtime_cost import runtime_cost, timed_runs_ms


def _counting_session() -> tuple[ort.InferenceSession, dict[str, np.ndarray], onnx.ModelProto]:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(model.SerializeToString()), {"x": np.ones(4, np.float32)}, model


class _Counted:
    """A real session that counts its runs."""

    def __init__(self, session: ort.InferenceSession) -> None:
        self.session, self.calls = session, 0

    def run(self, *args):
        self.calls += 1
        return self.session.run(*args)


def test_timed_runs_stop_at_the_budget_after_at_least_one() -> None:
    session, feeds, _ = _counting_session()
    counted = _Counted(session)
    assert len(timed_runs_ms(counted, feeds, 5, budget_s=0.0)) == 1
    assert counted.calls == 2  # the untimed warm-up, then one timed run
    counted.calls = 0
    assert len(timed_runs_ms(counted, feeds, 5, warm=True, budget_s=None)) == 5 and counted.calls == 5


def test_a_cost_says_how_many_runs_it_timed() -> None:
    session, feeds, model = _counting_session()
    cost = runtime_cost(model, session, feeds, 3, ("CPUExecutionProvider",), warm=True)
    assert cost.latency_runs == 3 and cost.latency_ms is not None and "median of 3 run(s)" in cost.summary()
