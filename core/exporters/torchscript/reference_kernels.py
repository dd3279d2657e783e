"""Reference kernels for the TorchScript exporter's custom-domain ONNX nodes: each runs the
original torch op (the TorchScript node the ONNX node came from) on the node's inputs, through
onnxruntime-extensions (:mod:`fixport.core.onnx_io.reference_plan`). Limits, stated where they apply:

* the torch op already carries its own constant arguments, so the node's attributes are dropped;
* the ONNX node's inputs must be the torch node's tensor inputs, in order;
* every value crosses Python as a flat list: slow for large tensors.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import torch

from fixport.core.exporters.torchscript.capture import TorchCapture
from fixport.core.foundation.comparison import to_numpy
from fixport.core.foundation.torch_arrays import tensor_from_array
from fixport.core.onnx_io.reference_plan import (
    NO_REFERENCE,
    NodeReference,
    register_python_op,
    rewrite_to_contrib,
    unique_op_type,
)

_EXTENSIONS_DTYPE_NAMES = {
    "Float": "dt_float", "Double": "dt_double", "Half": "dt_float16", "BFloat16": "dt_bfloat16",
    "Long": "dt_int64", "Int": "dt_int32", "Short": "dt_int16", "Char": "dt_int8", "Byte": "dt_uint8",
    "Bool": "dt_bool",
}


def reference_for(capture: TorchCapture) -> NodeReference:
    """The :data:`NodeReference` running each node's original TorchScript node from ``capture``."""
    return functools.partial(_reference_for, capture=capture)


def _reference_for(node: onnx.NodeProto, key: str, capture: TorchCapture) -> str:
    """Register a torch reference for ``node`` and rewrite it in place; '' or why not."""
    if not key:
        return NO_REFERENCE
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
    op_type = unique_op_type(node.op_type)
    register_python_op(op_type, _numpy_kernel(function), input_types, output_types)
    rewrite_to_contrib(node, op_type)
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
    return torch._C._create_function_from_graph(unique_op_type("fixport_function"), graph)


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
            result = function(*[tensor_from_array(a) for a in arrays])
        if isinstance(result, tuple):
            return tuple(to_numpy(r) for r in result)
        return to_numpy(result)
    return kernel
