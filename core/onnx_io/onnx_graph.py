"""Turn an ONNX ``ModelProto`` into the neutral :class:`fixport.core.words.graph.Graph`."""
from __future__ import annotations

from functools import cache
from typing import Any

import onnx
from onnx import helper, numpy_helper

from fixport.core.words.graph import Graph, Node, Value
from fixport.core.words.vocabulary import scope_from_onnx_name

PROVENANCE_ATTRIBUTE = "fixport_origin"
PLACEHOLDER_DOMAIN = "fixport"
PLACEHOLDER_OP = "Unsupported"
MAX_INLINE_TENSOR_ELEMENTS = 16


@cache
def _dtype_name(elem_type: int) -> str | None:
    return helper.tensor_dtype_to_np_dtype(elem_type).name if elem_type else None


def _tensor_type_info(type_proto: onnx.TypeProto) -> tuple[str | None, tuple[int | str | None, ...] | None]:
    if not type_proto.HasField("tensor_type"):
        return None, None
    tensor = type_proto.tensor_type
    dtype = _dtype_name(tensor.elem_type)
    if not tensor.HasField("shape"):
        return dtype, None
    dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
    return dtype, dims


def _attribute_value(attribute: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, onnx.TensorProto):
        array = numpy_helper.to_array(value)
        if array.size <= MAX_INLINE_TENSOR_ELEMENTS:
            return array.tolist()
        return f"tensor{tuple(array.shape)} {array.dtype}"
    if isinstance(value, onnx.GraphProto):
        return f"<subgraph {value.name} with {len(value.node)} nodes>"
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


def onnx_to_graph(model: onnx.ModelProto) -> Graph:
    """Neutral graph of the main graph; provenance attributes become ``Node.origin``."""
    graph_proto = model.graph
    result = Graph(kind="onnx", name=graph_proto.name)
    for info in [*graph_proto.input, *graph_proto.output, *graph_proto.value_info]:
        dtype, shape = _tensor_type_info(info.type)
        result.values[info.name] = Value(info.name, dtype, shape)
    initializers = {init.name for init in graph_proto.initializer}
    for init in graph_proto.initializer:
        result.values.setdefault(init.name, Value(init.name, _dtype_name(init.data_type), tuple(init.dims)))
    result.inputs = [i.name for i in graph_proto.input if i.name not in initializers]
    result.outputs = [o.name for o in graph_proto.output]
    for index, node_proto in enumerate(graph_proto.node):
        attributes: dict[str, Any] = {}
        origin: list[str] = []
        for attribute in node_proto.attribute:
            if attribute.name == PROVENANCE_ATTRIBUTE:
                origin = [attribute.s.decode("utf-8")]
            else:
                attributes[attribute.name] = _attribute_value(attribute)
        domain = node_proto.domain or "onnx"
        result.nodes.append(Node(
            id=node_proto.name or f"node_{index}",
            kind=f"{domain}::{node_proto.op_type}",
            name=node_proto.name,
            inputs=list(node_proto.input),
            outputs=list(node_proto.output),
            attributes=attributes,
            scope=scope_from_onnx_name(node_proto.name),
            origin=origin,
            unsupported=domain == PLACEHOLDER_DOMAIN and node_proto.op_type == PLACEHOLDER_OP,
        ))
    _make_ids_unique(result)
    if any(node.origin for node in result.nodes):  # a Fixport export, not a plain ONNX file
        _infer_missing_origin(result)
    return result


def _make_ids_unique(graph: Graph) -> None:
    seen: dict[str, int] = {}
    for node in graph.nodes:
        count = seen.get(node.id, 0)
        seen[node.id] = count + 1
        if count:
            node.id = f"{node.id}#{count}"


def _infer_missing_origin(graph: Graph) -> None:
    """Nodes the exporter made on its own (constants) belong to the node they feed, if only one."""
    by_id = graph.node_by_id
    for node in reversed(graph.nodes):
        if node.origin:
            continue
        origins = {tuple(by_id[c].origin) for out in node.outputs for c in graph.consumers_of.get(out, [])}
        if len(origins) == 1:
            (only,) = origins
            node.origin = list(only)


def strip_provenance(model: onnx.ModelProto) -> None:
    """Remove Fixport's provenance tags so the saved model is plain, checkable ONNX."""
    _strip_graph_provenance(model.graph)


def _strip_graph_provenance(graph: onnx.GraphProto) -> None:
    """... in ``graph`` and the If/Loop bodies inside it (a fix can emit those)."""
    for node in graph.node:
        kept = [a for a in node.attribute if a.name != PROVENANCE_ATTRIBUTE]
        if len(kept) != len(node.attribute):
            del node.attribute[:]
            node.attribute.extend(kept)
        for attribute in node.attribute:
            for body in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                _strip_graph_provenance(body)
