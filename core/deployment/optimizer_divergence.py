"""Where an optimized model's values first leave the plain export's: both run with every node
output exposed, the values an optimizer kept by name compared in the optimized graph's order."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper

from fixport.core.project.tolerances import ToleranceTable
from fixport.core.statistics.output_stats import largest_magnitude

SessionFactory = Callable[[onnx.ModelProto], object]  # a model -> an onnxruntime.InferenceSession (optimizations off)


def with_every_value(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose graph outputs are every node output (the main graph's)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    existing = {output.name for output in copy.graph.output}
    for node in copy.graph.node:
        for name in node.output:
            if name and name not in existing:
                copy.graph.output.append(helper.make_empty_tensor_value_info(name))
                existing.add(name)
    return copy


def every_value(model: onnx.ModelProto, feeds: dict[str, np.ndarray], session_for: SessionFactory
                ) -> dict[str, np.ndarray]:
    """Each node output of ``model`` on ``feeds``, by name."""
    exposed = with_every_value(model)
    session = session_for(exposed)
    names = [output.name for output in exposed.graph.output]
    return dict(zip(names, session.run(names, feeds)))  # type: ignore[attr-defined]


def first_divergent_node(plain: onnx.ModelProto, optimized: onnx.ModelProto, feeds: dict[str, np.ndarray],
                         tolerances: ToleranceTable, session_for: SessionFactory) -> tuple[str, str] | None:
    """(name, op type) of the first node of ``optimized`` whose output, where the plain export has a
    value of that name and shape, differs beyond ``tolerances``; None where none does (the values an
    optimizer renamed cannot be lined up)."""
    reference = every_value(plain, feeds, session_for)
    values = every_value(optimized, feeds, session_for)
    for node in optimized.graph.node:
        for name in node.output:
            if name not in reference or name not in values:
                continue
            expected, actual = np.asarray(reference[name]), np.asarray(values[name])
            if expected.shape != actual.shape or expected.dtype != actual.dtype:
                return node.name or name, node.op_type
            if not np.issubdtype(expected.dtype, np.number) and expected.dtype != np.bool_:
                continue
            rtol, atol = tolerances.for_values(str(expected.dtype), largest_magnitude(expected))
            if not np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True):
                return node.name or name, node.op_type
    return None
