"""`check --runtime openvino`: the export's outputs on the example inputs from OpenVINO (f32, the
strict precision mode) instead of ONNX Runtime, or the problem on the node OpenVINO refuses."""
from __future__ import annotations

from typing import Any

from fixport.core.foundation.comparison import to_numpy
from fixport.core.foundation.session_feeds import feeds_for
from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.cuda_precision import STRICT
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.onnx_io.openvino_errors import openvino_error_problem
from fixport.core.onnx_io.ort_session import create_session
from fixport.core.words.graph import Graph
from fixport.core.words.problems import UnsupportedNode

OPENVINO_CHECK_NOTE = ("The outputs were compared in OpenVINO (INFERENCE_PRECISION_HINT=f32); other sizes and "
                       "input values were checked in ONNX Runtime.")


def openvino_outputs(loaded: LoadedModel, model: OnnxModel, onnx_graph: Graph, source_graph: Graph | None
                     ) -> tuple[list[Any] | None, UnsupportedNode | None]:
    """``model``'s outputs in OpenVINO on the example inputs, or (None, the problem on the node it
    refuses or fails on)."""
    try:
        session = create_session(model, "openvino", precision=STRICT).session
        return session.run(None, feeds_for(session, loaded.input_names,
                                           [to_numpy(t) for t in loaded.example_inputs])), None
    except Exception as exc:  # OpenVINO's own exception types: the problem is the export's, on its node
        return None, openvino_error_problem(str(exc), onnx_graph, source_graph)


def openvino_refusal(model_path: str, onnx_graph: Graph) -> UnsupportedNode | None:
    """For an ONNX file (no torch model to compare with): the problem on the node OpenVINO refuses
    to read or compile, or None when it compiles."""
    try:
        create_session(model_path, "openvino", precision=STRICT)
    except Exception as exc:  # OpenVINO's own exception types
        return openvino_error_problem(str(exc), onnx_graph, None)
    return None
