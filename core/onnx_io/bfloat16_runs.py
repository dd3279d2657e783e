"""bfloat16 models in ONNX Runtime, fed and read as numpy.

numpy has no bfloat16 of its own: Fixport holds bfloat16 values as ``ml_dtypes.bfloat16`` arrays,
as onnx's ``numpy_helper`` does. ONNX Runtime's Python API neither takes nor returns those, and
its CPU provider has no bfloat16 kernel for most ops (Add, MatMul, Softmax). So a session is made
over a copy of the graph:

- **widened** (CPU): every bfloat16 tensor is float32, which holds each bfloat16 value exactly.
  A Cast to bfloat16 stays and is followed by a Cast back, so the graph still rounds where it says
  so. Between those casts it computes in float32 where a bfloat16 kernel rounds each op's result;
  the comparison allows for that with bfloat16's tolerance and its float32 reference
  (:mod:`fixport.core.checks.low_precision`).
- **boundary** (a provider with bfloat16 kernels, CUDA): only the graph's bfloat16 inputs and
  outputs are float32, cast to and from bfloat16 in the graph, both exactly.

:class:`Bfloat16Session` feeds that copy float32 and gives back the outputs the original graph
declares bfloat16 as ``ml_dtypes.bfloat16`` arrays, so callers see the model's own types.
Big weights on disk are widened tensor by tensor into a weights folder of their own, made once
per source folder (a node-by-node analysis opens many sessions over the same weights).
"""
from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from fixport.core.onnx_io.external_data import ExternalDataWriter, external_place, read_external_chunks
from fixport.core.onnx_io.onnx_model import WEIGHTS_FILE, OnnxModel, WeightsFolder

BFLOAT16 = onnx.TensorProto.BFLOAT16
FLOAT = onnx.TensorProto.FLOAT
TYPE_ATTRIBUTES = ("to", "dtype")  # an int attribute naming an output's element type (Cast, EyeLike, Random*)
ROUNDED_SUFFIX = "__fixport_bfloat16"
WIDENED_ON_CPU_NOTE = (
    "ONNX Runtime's CPU provider has no bfloat16 kernels for most ops, so the model ran with its bfloat16 "
    "tensors widened to float32 (exactly) and rounded to bfloat16 where the graph casts to it: this checks the "
    "conversion, held to bfloat16's tolerance. For bfloat16 kernels' own rounding, compare with --provider cuda.")

# The widened weights of each source folder: (its WeightsFolder, {(file, offset, length): (offset, length)}).
_widened_weights: dict[Path, tuple[WeightsFolder, dict[tuple[str, int, int], tuple[int, int]]]] = {}


def has_bfloat16(model: onnx.ModelProto) -> bool:
    """Whether any value, weight or type attribute of ``model`` is bfloat16."""
    return any(True for _ in _bfloat16_places(model))


def _bfloat16_places(model: onnx.ModelProto) -> Iterator[object]:
    for graph in _graphs(model.graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            if BFLOAT16 in _element_types(info.type):
                yield info
        for tensor in graph.initializer:
            if tensor.data_type == BFLOAT16:
                yield tensor
        yield from _typed_nodes(graph.node)
    for function in model.functions:
        yield from _typed_nodes(function.node)


def _typed_nodes(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    for node in nodes:
        for attribute in node.attribute:
            if (attribute.name in TYPE_ATTRIBUTES and attribute.type == onnx.AttributeProto.INT
                    and attribute.i == BFLOAT16) or (attribute.HasField("t") and attribute.t.data_type == BFLOAT16):
                yield node


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph (If, Loop, Scan bodies) inside it."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graphs(subgraph)


def _element_types(type_proto: onnx.TypeProto) -> list[int]:
    return [holder.elem_type for holder in _tensor_types(type_proto)]


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


def bfloat16_values(model: onnx.ModelProto) -> set[str]:
    """The names of ``model``'s values declared bfloat16 (graph inputs, outputs and value_info):
    an output added untyped to read an intermediate value is known by its value_info."""
    graph = model.graph
    return {info.name for info in (*graph.input, *graph.output, *graph.value_info)
            if BFLOAT16 in _element_types(info.type)}


def widened(model: OnnxModel) -> OnnxModel:
    """A copy of ``model`` computing in float32 wherever it holds bfloat16 (see the module docstring)."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)  # external weights are references: the copy is the graph's size
    widen_in_place(proto)
    return _with_widened_weights(model, proto)


def widen_in_place(model: onnx.ModelProto) -> None:
    """Every bfloat16 type, type attribute and tensor held in ``model`` as float32, and each Cast to
    bfloat16 followed by a Cast back; external tensors are left to the caller."""
    for graph in _graphs(model.graph):
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


def boundary_in_float32(model: OnnxModel) -> OnnxModel:
    """A copy of ``model`` whose bfloat16 graph inputs and outputs are float32, cast to and from
    bfloat16 at the edge of the graph (for a provider that runs bfloat16 itself)."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)
    graph = proto.graph
    casts_in: list[onnx.NodeProto] = []
    for info in graph.input:
        if info.type.tensor_type.elem_type == BFLOAT16:
            inner = info.name + ROUNDED_SUFFIX
            _rename_uses(graph, info.name, inner)
            casts_in.append(onnx.helper.make_node("Cast", [info.name], [inner], to=BFLOAT16))
            info.type.tensor_type.elem_type = FLOAT
    for info in graph.output:
        if info.type.tensor_type.elem_type == BFLOAT16:
            inner = info.name + ROUNDED_SUFFIX
            for node in graph.node:
                node.output[:] = [inner if name == info.name else name for name in node.output]
            _rename_uses(graph, info.name, inner)
            graph.node.append(onnx.helper.make_node("Cast", [inner], [info.name], to=FLOAT))
            info.type.tensor_type.elem_type = FLOAT
    nodes = casts_in + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return model.derived(proto)


def _rename_uses(graph: onnx.GraphProto, name: str, new_name: str) -> None:
    """Point every node input reading ``name`` (in subgraphs too) at ``new_name``."""
    for inner in _graphs(graph):
        for node in inner.node:
            node.input[:] = [new_name if value == name else value for value in node.input]


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


def _with_widened_weights(source: OnnxModel, proto: onnx.ModelProto) -> OnnxModel:
    """``proto`` (already widened inline) with its external weights read from widened copies: the
    bfloat16 ones widened to float32, the others copied, all in a folder made once per source folder."""
    external = [t for graph in _graphs(proto.graph) for t in graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    if not external or source.base_dir is None:
        return OnnxModel(proto)
    folder, places = _widened_folder(source)
    data_path = folder.path / WEIGHTS_FILE
    with ExternalDataWriter(data_path) as writer:
        for tensor in external:
            path, offset, length = external_place(tensor, source.base_dir)
            key = (str(path), offset, length)
            original = onnx.TensorProto()
            original.CopyFrom(tensor)
            del tensor.external_data[:]
            if key in places:
                _point_at(tensor, places[key])
            else:
                writer.add(tensor, lambda data, original=original: _write_widened(original, source.base_dir, data))
                places[key] = _place_of(tensor)
            if original.data_type == BFLOAT16:
                tensor.data_type = FLOAT
    return OnnxModel(proto, folder.path, folder)


def _widened_folder(source: OnnxModel) -> tuple[WeightsFolder, dict[tuple[str, int, int], tuple[int, int]]]:
    """The folder of ``source``'s widened weights, made on first use; it goes with the source's
    temporary folder, or once the source folder is found gone."""
    assert source.base_dir is not None
    key = Path(source.base_dir).resolve()
    entry = _widened_weights.get(key)
    if entry is None or not entry[0].path.exists():
        for stale in [k for k in _widened_weights if not k.exists()]:
            _widened_weights.pop(stale)[0].release()
        entry = _widened_weights[key] = (WeightsFolder(), {})
        if source.folder is not None:
            weakref.finalize(source.folder, _release_widened, key)
    return entry


def _release_widened(key: Path) -> None:
    entry = _widened_weights.pop(key, None)
    if entry is not None:
        entry[0].release()


def _point_at(tensor: onnx.TensorProto, place: tuple[int, int]) -> None:
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", WEIGHTS_FILE), ("offset", str(place[0])), ("length", str(place[1]))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def _place_of(tensor: onnx.TensorProto) -> tuple[int, int]:
    entries = {entry.key: entry.value for entry in tensor.external_data}
    return int(entries["offset"]), int(entries["length"])


def _write_widened(tensor: onnx.TensorProto, base_dir: Path, data: Any) -> int:
    """Write an external tensor's bytes, bfloat16 ones as float32, chunk by chunk; the count written."""
    written = 0
    for chunk in read_external_chunks(tensor, base_dir):
        if tensor.data_type == BFLOAT16:  # a bfloat16 is the top half of the float32 holding it
            chunk = (np.frombuffer(chunk, dtype="<u2").astype("<u4") << 16).tobytes()
        written += data.write(chunk)
    return written


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


def as_float32(value: Any) -> Any:
    """A bfloat16 array as float32 (exact); anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype == ml_dtypes.bfloat16:
        return value.astype(np.float32)
    return value
