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


def median_latency_ms(session: Any, feeds: dict[str, Any], runs: int) -> float | None:
    """The median wall time of ``runs`` ``session.run`` calls on ``feeds``, after one untimed run
    (the first run allocates its buffers); None for 0 runs."""
    if runs <= 0:
        return None
    session.run(None, feeds)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


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
                 providers: list[str] | tuple[str, ...] = ()) -> RuntimeCost:
    """Size and node count of ``model``, and its latency in ``session`` (not timed without one)."""
    proto = model.proto if isinstance(model, OnnxModel) else model
    latency = median_latency_ms(session, feeds, runs) if session is not None else None
    return RuntimeCost(file_bytes=model_bytes(model), node_count=len(proto.graph.node), latency_ms=latency,
                       latency_runs=runs if latency is not None else 0, providers=tuple(providers))
