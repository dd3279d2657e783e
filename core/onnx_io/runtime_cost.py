"""Measure an export's :class:`~fixport.core.records.runtime_cost.RuntimeCost`: its size, node count
and the median latency of an ONNX Runtime session (no torch)."""
from __future__ import annotations

import statistics
import time
from typing import Any

import onnx

from fixport.core.onnx_io.external_data import all_tensors, tensor_bytes
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.records.runtime_cost import RuntimeCost


def model_bytes(model: OnnxModel | onnx.ModelProto) -> int:
    """The bytes of the model written as one file: the graph plus every weight, inline or on disk."""
    proto, base_dir = (model.proto, model.base_dir) if isinstance(model, OnnxModel) else (model, None)
    external = sum(tensor_bytes(tensor, base_dir) for tensor in all_tensors(proto)
                   if tensor.data_location == onnx.TensorProto.EXTERNAL)
    return proto.ByteSize() + external


# Timed runs stop once they took this long: a real-size model runs for seconds, and five of them
# (plus a warm-up) were 40 s of a 1.5 B compare for a median that one or two runs give as well.
LATENCY_BUDGET_S = 10.0


def median_latency_ms(session: Any, feeds: dict[str, Any], runs: int) -> float | None:
    """The median wall time of ``runs`` ``session.run`` calls on ``feeds``, after one untimed run
    (the first run allocates its buffers); None for 0 runs."""
    times = timed_runs_ms(session, feeds, runs)
    return statistics.median(times) if times else None


def timed_runs_ms(session: Any, feeds: dict[str, Any], runs: int, *, warm: bool = False,
                  budget_s: float | None = None) -> list[float]:
    """The wall times of up to ``runs`` ``session.run`` calls on ``feeds``, after one untimed run unless
    the session is ``warm`` (it ran these feeds already); with ``budget_s``, no run starts once the
    timed runs took that long (at least one is timed)."""
    if runs <= 0:
        return []
    if not warm:
        session.run(None, feeds)
    times: list[float] = []
    while len(times) < runs and (budget_s is None or not times or sum(times) < budget_s * 1000):
        started = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - started) * 1000)
    return times


def session_cost(model: OnnxModel, input_names: list[str], inputs: list[Any], runs: int) -> RuntimeCost | None:
    """``model`` timed in its own CPU session on ``inputs`` (numpy arrays); None where ONNX Runtime
    cannot open or run it (a node it has no kernel for)."""
    from fixport.core.foundation.session_feeds import feeds_for
    from fixport.core.onnx_io.ort_session import create_session

    try:
        info = create_session(model, "cpu")
        feeds = feeds_for(info.session, input_names, inputs)
        return runtime_cost(model, info.session, feeds, runs, info.providers_used)
    except Exception:  # ORT's own exception types: an export it cannot run has no latency
        return None


def runtime_cost(model: OnnxModel | onnx.ModelProto, session: Any | None, feeds: dict[str, Any], runs: int,
                 providers: list[str] | tuple[str, ...] = (), *, warm: bool = False) -> RuntimeCost:
    """Size and node count of ``model``, and its median latency in ``session`` (not timed without one)
    over up to ``runs`` runs, fewer where they pass LATENCY_BUDGET_S; ``warm``: the session ran ``feeds``."""
    proto = model.proto if isinstance(model, OnnxModel) else model
    times = timed_runs_ms(session, feeds, runs, warm=warm, budget_s=LATENCY_BUDGET_S) if session is not None else []
    return RuntimeCost(file_bytes=model_bytes(model), node_count=len(proto.graph.node),
                       latency_ms=statistics.median(times) if times else None, latency_runs=len(times),
                       providers=tuple(providers))
