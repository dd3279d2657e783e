"""Reference kernels for custom-domain ONNX nodes, so a comparison runs without the backend.

A node such as ``rknn_cst::cstThreshold`` or ``custom::deform_conv2d`` only runs on the
backend it was written for. Through onnxruntime-extensions, a Python function can be an ORT
kernel; here that function runs the *original torch op* (the TorchScript node the ONNX node
came from) on the node's inputs. Limits, stated where they apply:

* onnxruntime-extensions only dispatches Python ops in the domain ``ai.onnx.contrib``, so the
  node is rewritten (domain and a unique op type) in a copy of the model;
* its attributes are dropped: the torch op already carries its own constant arguments, and
  extensions only passes scalar attributes anyway;
* the ONNX node's inputs must be the torch node's tensor inputs, in order;
* every value crosses Python as a flat list: slow for large tensors.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch

from fixport.core.exporters.diagnosis import ORT_NATIVE_DOMAINS
from fixport.core.exporters.torchscript_capture import TorchCapture
from fixport.core.model.graph import Graph
from fixport.core.onnx_io.onnx_model import OnnxModel

CONTRIB_DOMAIN = "ai.onnx.contrib"
CONTRIB_OPSET_VERSION = 1
_unique_suffix = itertools.count()  # registrations are process-global and cannot be removed
# Freeing an ORT session that runs extensions Python ops, after other such sessions came and
# went, can segfault (onnxruntime-extensions 0.15): such sessions live as long as the process.
# Only custom-op models pay this; the worker process is restarted when it matters.
_sessions_kept_alive: list[Any] = []

_EXTENSIONS_DTYPE_NAMES = {
    "Float": "dt_float", "Double": "dt_double", "Half": "dt_float16", "BFloat16": "dt_bfloat16",
    "Long": "dt_int64", "Int": "dt_int32", "Short": "dt_int16", "Char": "dt_int8", "Byte": "dt_uint8",
    "Bool": "dt_bool",
}


@dataclass
class ReferencePlan:
    """A model whose custom-domain nodes run on torch references, and what could not be done."""

    model: OnnxModel
    referenced: list[str] = field(default_factory=list)  # ONNX node names given a reference
    missing: list[str] = field(default_factory=list)  # one sentence per node left without one
    messages: list[str] = field(default_factory=list)

    @property
    def needs_extensions(self) -> bool:
        return bool(self.referenced)

    def session_options(self) -> ort.SessionOptions | None:
        """Session options loading onnxruntime-extensions, when a reference is in the model."""
        if not self.needs_extensions:
            return None
        from onnxruntime_extensions import get_library_path

        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        return options

    def create_session(self, model: OnnxModel | None = None, provider: str = "cpu", **options: Any) -> Any:
        """A :class:`fixport.core.onnx_io.ort_session.SessionInfo` for ``model`` (default: the plan's model);
        ``options`` (precision, profile) go to :func:`fixport.core.onnx_io.ort_session.create_session`."""
        from fixport.core.onnx_io.ort_session import create_session

        info = create_session(self.model if model is None else model, provider, self.session_options(), **options)
        if self.needs_extensions:
            _sessions_kept_alive.append(info.session)
        return info


def custom_domain_node_indices(model: onnx.ModelProto) -> list[int]:
    """Positions of nodes plain ONNX Runtime has no kernel or local function for."""
    local_functions = {(f.domain, f.name) for f in model.functions}
    return [index for index, node in enumerate(model.graph.node)
            if (node.domain or "onnx") not in ORT_NATIVE_DOMAINS and (node.domain, node.op_type) not in local_functions]


def plan_references(model: OnnxModel, onnx_graph: Graph | None, capture: TorchCapture | None) -> ReferencePlan:
    """Rewrite every custom-domain node of a copy of ``model`` to a torch reference, if possible.

    ``onnx_graph`` must list the nodes in ``model``'s order with their provenance (``origin``).
    """
    indices = custom_domain_node_indices(model.proto)
    if not indices:
        return ReferencePlan(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    plan = ReferencePlan(model.derived(copy))
    try:
        import onnxruntime_extensions  # noqa: F401
    except ImportError:
        plan.missing = [f"{_label(model.proto.graph.node[i])}: onnxruntime-extensions is not installed "
                        "(pip install onnxruntime-extensions)" for i in indices]
        return plan
    for index in indices:
        node = copy.graph.node[index]
        origin = onnx_graph.nodes[index].origin if onnx_graph is not None else []
        why_not = _reference_for(node, origin[0] if origin else "", capture)
        if why_not:
            plan.missing.append(f"{_label(node)}: {why_not}")
        else:
            plan.referenced.append(node.name or node.op_type)
    if plan.referenced:
        if not any(o.domain == CONTRIB_DOMAIN for o in copy.opset_import):
            copy.opset_import.append(onnx.helper.make_opsetid(CONTRIB_DOMAIN, CONTRIB_OPSET_VERSION))
        plan.messages.append(
            f"{len(plan.referenced)} custom-domain node(s) ran on a torch reference through "
            f"onnxruntime-extensions ({', '.join(plan.referenced[:5])}{'...' if len(plan.referenced) > 5 else ''}): "
            "they match torch by construction, the rest of the graph is what is compared.")
    return plan


def _label(node: onnx.NodeProto) -> str:
    return f"{node.domain}::{node.op_type} ({node.name or 'unnamed'})"


def _reference_for(node: onnx.NodeProto, key: str, capture: TorchCapture | None) -> str:
    """Register a torch reference for ``node`` and rewrite it in place; '' or why not."""
    if capture is None or not key:
        return ("no torch reference: the node has no provenance (an ONNX file exported elsewhere) "
                "or the torch graph was not captured")
    torch_node = capture.node_by_key.get(key)
    if torch_node is None:
        return f"no torch reference: TorchScript node {key} was not found in the traced graph"
    tensor_inputs = [v for v in torch_node.inputs() if isinstance(v.type(), torch._C.TensorType)]
    onnx_inputs = [name for name in node.input if name]
    if len(tensor_inputs) != len(onnx_inputs) or len(onnx_inputs) != len(node.input):
        return (f"no torch reference: the ONNX node has {len(onnx_inputs)} inputs but {torch_node.kind()} "
                f"has {len(tensor_inputs)} tensor inputs, so they cannot be paired")
    try:
        function = single_node_function(torch_node)
        input_types = [_extensions_dtype(v) for v in tensor_inputs]
        output_types = [_extensions_dtype(v) for v in torch_node.outputs()]
    except (ValueError, RuntimeError) as exc:
        return f"no torch reference: {exc}"
    if len(output_types) != len(node.output):
        return f"no torch reference: {torch_node.kind()} has {len(output_types)} outputs, the node {len(node.output)}"
    op_type = f"{node.op_type}_fixport_reference_{next(_unique_suffix)}"
    _register_python_op(op_type, _numpy_kernel(function), input_types, output_types)
    node.domain = CONTRIB_DOMAIN
    node.op_type = op_type
    del node.attribute[:]
    return ""


def single_node_function(torch_node: torch._C.Node) -> Any:
    """A ScriptFunction running one TorchScript node: tensor inputs as arguments, constants inlined."""
    graph = torch._C.Graph()
    value_map: dict[torch._C.Value, torch._C.Value] = {}
    for value in torch_node.inputs():
        if isinstance(value.type(), torch._C.TensorType):
            value_map[value] = graph.addInput()
            value_map[value].setType(value.type())
        else:
            value_map[value] = _clone_constant_producer(graph, value, value_map)
    clone = graph.createClone(torch_node, lambda value: value_map[value])
    graph.insertNode(clone)
    outputs = list(clone.outputs())
    if len(outputs) == 1:
        graph.registerOutput(outputs[0])
    else:
        pack = graph.create("prim::TupleConstruct", outputs)
        pack.output().setType(torch._C.TupleType([v.type() for v in outputs]))
        graph.insertNode(pack)
        graph.registerOutput(pack.output())
    return torch._C._create_function_from_graph(f"fixport_reference_{next(_unique_suffix)}", graph)


def _clone_constant_producer(graph: torch._C.Graph, value: torch._C.Value,
                             value_map: dict[torch._C.Value, torch._C.Value]) -> torch._C.Value:
    """Copy the constant (or list of constants) behind a non-tensor argument into ``graph``."""
    producer = value.node()
    if producer.kind() not in ("prim::Constant", "prim::ListConstruct"):
        raise ValueError(f"argument {value.debugName()} is computed by {producer.kind()}, not a constant")
    for argument in producer.inputs():
        if argument not in value_map:
            value_map[argument] = _clone_constant_producer(graph, argument, value_map)
    clone = graph.createClone(producer, lambda v: value_map[v])
    graph.insertNode(clone)
    return clone.output()


def _extensions_dtype(value: torch._C.Value) -> Any:
    from onnxruntime_extensions import PyCustomOpDef

    value_type = value.type()
    scalar = value_type.scalarType() if isinstance(value_type, torch._C.TensorType) else None
    if scalar not in _EXTENSIONS_DTYPE_NAMES:
        raise ValueError(f"value {value.debugName()} has no dtype onnxruntime-extensions can pass ({scalar})")
    return getattr(PyCustomOpDef, _EXTENSIONS_DTYPE_NAMES[scalar])


def _numpy_kernel(function: Any) -> Callable[..., Any]:
    def kernel(*arrays: np.ndarray, **_attributes: Any) -> Any:
        with torch.no_grad():
            result = function(*[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        if isinstance(result, tuple):
            return tuple(r.detach().cpu().numpy() for r in result)
        return result.detach().cpu().numpy()
    return kernel


def _register_python_op(op_type: str, kernel: Callable[..., Any], inputs: list[Any], outputs: list[Any]) -> None:
    from onnxruntime_extensions import onnx_op

    onnx_op(op_type=op_type, inputs=inputs, outputs=outputs)(kernel)
