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

The widening of the graph itself and the session are the fix script's support's
(``core/foundation/bfloat16.py``), written once for both; this module adds the weights on disk.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from fixport.core.foundation.bfloat16 import (
    BFLOAT16,
    FLOAT,
    ROUNDED_SUFFIX,
    all_graphs,
    widen_in_place,
)
from fixport.core.onnx_io.external_data import ExternalDataWriter, external_place, read_external_chunks
from fixport.core.onnx_io.onnx_model import WEIGHTS_FILE, OnnxModel, WeightsFolder

__all__ = ["WIDENED_ON_CPU_NOTE", "boundary_in_float32", "casts_weights_at_use", "widened"]

WIDENED_ON_CPU_NOTE = (
    "ONNX Runtime's CPU provider has no bfloat16 kernels for most ops, so the model ran with its bfloat16 "
    "tensors widened to float32 (exactly) and rounded to bfloat16 where the graph casts to it: this checks the "
    "conversion, held to bfloat16's tolerance. For bfloat16 kernels' own rounding, compare with --provider cuda.")

WEIGHT_CAST_PREFIX = "fixport_widen_weight/"
WIDENED_SUFFIX = "__fixport_float32"
ROWS_SUFFIX = "__fixport_bfloat16_rows"  # a Gather's bfloat16 rows, before they are widened

# The widened weights of each source folder: (its WeightsFolder, {(file, offset, length): (offset, length)}).
_widened_weights: dict[Path, tuple[WeightsFolder, dict[tuple[str, int, int], tuple[int, int]]]] = {}


def widened(model: OnnxModel) -> OnnxModel:
    """A copy of ``model`` computing in float32 wherever it holds bfloat16 (see the module docstring)."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)  # external weights are references: the copy is the graph's size
    widen_in_place(proto)
    if model.base_dir is not None and _cast_at_use(proto):
        return model.derived(proto)
    return _with_widened_weights(model, proto)


def casts_weights_at_use(model: onnx.ModelProto) -> bool:
    """Whether ``model`` casts bfloat16 weights to float32 where they are used (:func:`widened`): its
    session must not fold those Casts into float32 copies of the weights."""
    return any(node.name.startswith(WEIGHT_CAST_PREFIX) for graph in all_graphs(model.graph) for node in graph.node)


def _cast_at_use(proto: onnx.ModelProto) -> bool:
    """Keep each external bfloat16 weight as it is on disk and widen it with a Cast where the graph
    reads it: a session then holds the bfloat16 file once (mapped) and each weight's float32 copy
    only while its node runs, where a widened copy of the weights would hold them twice over. A
    Gather of rows (an embedding) is widened after it, rows only: Gather moves values, so the result
    is the same, and the vocabulary's float32 copy is never made. False (nothing changed) when a
    weight is also a graph input or output, whose type must not change."""
    places = [(graph, tensor) for graph in all_graphs(proto.graph) for tensor in graph.initializer
              if tensor.data_type == BFLOAT16 and tensor.data_location == onnx.TensorProto.EXTERNAL]
    edges = {info.name for graph in all_graphs(proto.graph) for info in (*graph.input, *graph.output)}
    if not places or any(tensor.name in edges for _, tensor in places):
        return False
    for graph, tensor in places:
        _widen_gathered_rows(graph, tensor.name)
        wide = tensor.name + WIDENED_SUFFIX
        if not _reads(graph, tensor.name):
            continue
        _rename_uses(graph, tensor.name, wide, keep=_gathers_rows)
        for info in graph.value_info:
            if info.name == tensor.name:
                info.name = wide
        # first in the graph: ONNX Runtime's order (a depth-first walk back from the outputs) then runs
        # each Cast just before its reader; placed there in the file, all of them ran first and were
        # held at once (a 0.5 B prefill: 1.35 GB of float32 weights during the run, not 0.5)
        graph.node.insert(0, onnx.helper.make_node("Cast", [tensor.name], [wide], to=FLOAT,
                                                   name=WEIGHT_CAST_PREFIX + tensor.name))
    return True


def _widen_gathered_rows(graph: onnx.GraphProto, weight: str) -> None:
    """Each Gather of ``weight``'s rows (its data input) in ``graph`` gathers bfloat16, then widens them."""
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        nodes.append(node)
        if node.op_type == "Gather" and node.domain in ("", "ai.onnx") and node.input and node.input[0] == weight:
            gathered = node.output[0] + ROWS_SUFFIX
            widened = node.output[0]
            node.output[0] = gathered
            nodes.append(onnx.helper.make_node("Cast", [gathered], [widened], to=FLOAT,
                                               name=WEIGHT_CAST_PREFIX + gathered))
    if len(nodes) != len(graph.node):
        del graph.node[:]
        graph.node.extend(nodes)


def _gathers_rows(node: onnx.NodeProto) -> bool:
    """A Gather that :func:`_widen_gathered_rows` made read the bfloat16 table itself."""
    return node.op_type == "Gather" and bool(node.output) and node.output[0].endswith(ROWS_SUFFIX)


def _reads(graph: onnx.GraphProto, name: str) -> bool:
    """Whether a node of ``graph`` (or of a subgraph) other than a Gather of its rows reads ``name``."""
    return any(name in node.input and not _gathers_rows(node) for inner in all_graphs(graph) for node in inner.node)


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


def _rename_uses(graph: onnx.GraphProto, name: str, new_name: str,
                 keep: Callable[[onnx.NodeProto], bool] = lambda node: False) -> None:
    """Point every node input reading ``name`` (in subgraphs too) at ``new_name``, but in the nodes ``keep`` names."""
    for inner in all_graphs(graph):
        for node in inner.node:
            if not keep(node):
                node.input[:] = [new_name if value == name else value for value in node.input]


def _with_widened_weights(source: OnnxModel, proto: onnx.ModelProto) -> OnnxModel:
    """``proto`` (already widened inline) with its external weights read from widened copies: the
    bfloat16 ones widened to float32, the others copied, all in a folder made once per source folder."""
    external = [t for graph in all_graphs(proto.graph) for t in graph.initializer
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
