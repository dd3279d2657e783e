"""bfloat16 models in ONNX Runtime's CPU provider, which has no bfloat16 kernels for most ops: run
with the bfloat16 tensors widened to float32 (exactly), rounded where the graph casts to bfloat16."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

BFLOAT16 = onnx.TensorProto.BFLOAT16
FLOAT = onnx.TensorProto.FLOAT
TYPE_ATTRIBUTES = ("to", "dtype")  # an int attribute naming an output's element type (Cast, EyeLike, Random*)
ROUNDED_SUFFIX = "__fixport_bfloat16"


def all_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph (If, Loop, Scan bodies) inside it."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from all_graphs(attribute.g)
            for subgraph in attribute.graphs:
                yield from all_graphs(subgraph)


def _tensor_types(type_proto: onnx.TypeProto) -> Iterator[Any]:
    """The tensor types inside ``type_proto`` (a tensor, or a sequence/optional/map of them)."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        yield getattr(type_proto, kind)
    elif kind == "sequence_type":
        yield from _tensor_types(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        yield from _tensor_types(type_proto.optional_type.elem_type)
    elif kind == "map_type":
        yield from _tensor_types(type_proto.map_type.value_type)


def _element_types(type_proto: onnx.TypeProto) -> list[int]:
    return [holder.elem_type for holder in _tensor_types(type_proto)]


def _typed_nodes(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    for node in nodes:
        for attribute in node.attribute:
            if (attribute.name in TYPE_ATTRIBUTES and attribute.type == onnx.AttributeProto.INT
                    and attribute.i == BFLOAT16) or (attribute.HasField("t") and attribute.t.data_type == BFLOAT16):
                yield node


def _bfloat16_places(model: onnx.ModelProto) -> Iterator[object]:
    for graph in all_graphs(model.graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            if BFLOAT16 in _element_types(info.type):
                yield info
        for tensor in graph.initializer:
            if tensor.data_type == BFLOAT16:
                yield tensor
        yield from _typed_nodes(graph.node)
    for function in model.functions:
        yield from _typed_nodes(function.node)


def has_bfloat16(model: onnx.ModelProto) -> bool:
    """Whether any value, weight or type attribute of ``model`` is bfloat16."""
    return any(True for _ in _bfloat16_places(model))


def bfloat16_values(model: onnx.ModelProto) -> set[str]:
    """The names of ``model``'s values declared bfloat16 (graph inputs, outputs and value_info):
    an output added untyped to read an intermediate value is known by its value_info."""
    graph = model.graph
    return {info.name for info in (*graph.input, *graph.output, *graph.value_info)
            if BFLOAT16 in _element_types(info.type)}


def _widen_type(type_proto: onnx.TypeProto) -> None:
    for holder in _tensor_types(type_proto):
        if holder.elem_type == BFLOAT16:
            holder.elem_type = FLOAT


def _widen_nodes(nodes: Any, owner: onnx.GraphProto | onnx.FunctionProto) -> None:
    """Type attributes to float32, tensor attributes widened; a Cast to bfloat16 keeps its rounding."""
    widened_nodes: list[onnx.NodeProto] = []
    for node in nodes:
        rounds = node.op_type == "Cast" and node.domain in ("", "ai.onnx") and any(
            a.name == "to" and a.i == BFLOAT16 for a in node.attribute)
        for attribute in node.attribute:
            if attribute.name in TYPE_ATTRIBUTES and attribute.type == onnx.AttributeProto.INT \
                    and attribute.i == BFLOAT16 and not rounds:
                attribute.i = FLOAT
            if attribute.HasField("t") and attribute.t.data_type == BFLOAT16:
                _widen_inline(attribute.t)
        widened_nodes.append(node)
        if rounds:  # Cast(to=bfloat16) -> rounded, then Cast(to=float) -> the original name
            rounded = node.output[0] + ROUNDED_SUFFIX
            back = onnx.helper.make_node("Cast", [rounded], [node.output[0]], to=FLOAT,
                                         name=(node.name or node.output[0]) + ROUNDED_SUFFIX)
            node.output[0] = rounded
            widened_nodes.append(back)
    del owner.node[:]
    owner.node.extend(widened_nodes)


def _widen_inline(tensor: onnx.TensorProto) -> None:
    """A bfloat16 tensor held in the proto, as float32 in place."""
    values = numpy_helper.to_array(tensor).astype(np.float32)
    tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))


def widen_in_place(model: onnx.ModelProto) -> None:
    """Every bfloat16 type, type attribute and tensor held in ``model`` as float32, and each Cast to
    bfloat16 followed by a Cast back; external tensors are left to the caller."""
    for graph in all_graphs(model.graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            _widen_type(info.type)
        _widen_nodes(graph.node, graph)
        for tensor in graph.initializer:
            if tensor.data_type == BFLOAT16 and tensor.data_location != onnx.TensorProto.EXTERNAL:
                _widen_inline(tensor)
    for function in model.functions:
        for info in getattr(function, "value_info", []):
            _widen_type(info.type)
        _widen_nodes(function.node, function)


def as_float32(value: Any) -> Any:
    """A bfloat16 array as float32 (exact); anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype == ml_dtypes.bfloat16:
        return value.astype(np.float32)
    return value


class Bfloat16Session:
    """An ONNX Runtime session over a widened or boundary copy that takes and gives the original
    graph's types: bfloat16 inputs fed as float32, bfloat16 outputs returned as ml_dtypes arrays."""

    def __init__(self, session: Any, bfloat16_names: set[str]) -> None:
        self._session = session
        self._bfloat16_names = bfloat16_names

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, Any], run_options: Any = None) -> list[Any]:
        wide = {name: as_float32(value) for name, value in feeds.items()}
        outputs = self._session.run(output_names, wide, run_options)
        names = output_names or [output.name for output in self._session.get_outputs()]
        return [value.astype(ml_dtypes.bfloat16) if name in self._bfloat16_names and hasattr(value, "astype")
                else value for name, value in zip(names, outputs)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)
