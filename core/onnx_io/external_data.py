"""Models above protobuf's 2 GB: their weights written beside the model file, as onnx and torch.onnx do.

A ModelProto cannot be serialised once it passes 2 GB, so ONNX Runtime, the checker and the saved
file all take such a model as a path to a model file whose tensors live in one ``.data`` file
beside it. :func:`write_with_external_data` writes that pair without changing or copying the
model in memory (``onnx.save_model(save_as_external_data=True)`` empties the caller's tensors), and
:func:`session_source` gives ONNX Runtime bytes for a small model or such a path for a large one.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnx
from google.protobuf.message import EncodeError

PROTOBUF_LIMIT_BYTES = 2 * 1024**3 - 1024**2  # protobuf cannot serialise 2 GB; keep a margin
# Above this, ONNX Runtime opens a model from a file with external data instead of from bytes: the
# serialised bytes and ORT's parsed copy of them would each hold the weights once more.
SESSION_FROM_FILE_ABOVE_BYTES = 256 * 1024**2
EXTERNAL_TENSOR_MIN_BYTES = 1024  # smaller tensors stay in the model file (as onnx's own default)


def fits_in_one_file(model: onnx.ModelProto, limit: int | None = None) -> bool:
    """Whether ``model`` serialises to under ``limit`` bytes, by default protobuf's 2 GB (its
    ``ByteSize`` itself raises past 2 GB)."""
    limit = PROTOBUF_LIMIT_BYTES if limit is None else limit
    if sum(len(tensor.raw_data) for tensor in all_tensors(model)) >= limit:
        return False
    try:
        return model.ByteSize() < limit
    except EncodeError:
        return False


def all_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model: initializers and tensor attributes, in subgraphs and functions too."""
    def of_graph(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
        yield from graph.initializer
        for node in graph.node:
            yield from of_nodes([node])

    def of_nodes(nodes) -> Iterator[onnx.TensorProto]:
        for node in nodes:
            for attribute in node.attribute:
                if attribute.HasField("t"):
                    yield attribute.t
                yield from attribute.tensors
                if attribute.HasField("g"):
                    yield from of_graph(attribute.g)
                for graph in attribute.graphs:
                    yield from of_graph(graph)

    yield from of_graph(model.graph)
    for function in model.functions:
        yield from of_nodes(function.node)


def write_with_external_data(model: onnx.ModelProto, path: Path, data_name: str | None = None) -> list[Path]:
    """Write ``model`` to ``path`` with its initializers' bytes in ``data_name`` (beside it); the
    model in memory is not touched. Returns the two files written.

    The model file is a copy of ``model`` whose big initializers name their place in the data
    file instead of holding their bytes: the weights are never held twice (protobuf keeps a
    cleared field's memory until the whole message goes, so emptying ``model`` would not help)."""
    data_path = path.parent / (data_name or f"{path.name}.data")
    light = _copy_without(model, "graph")
    _copy_fields(model.graph, light.graph, without="initializer")
    offset = 0
    with open(data_path, "wb") as data:
        for tensor in model.graph.initializer:
            kept = light.graph.initializer.add()
            if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.raw_data) < EXTERNAL_TENSOR_MIN_BYTES:
                kept.CopyFrom(tensor)
                continue
            _copy_fields(tensor, kept, without="raw_data")
            padding = -offset % 4096  # aligned, so ONNX Runtime can map the file
            data.write(b"\0" * padding)
            offset += padding
            length = data.write(tensor.raw_data)
            kept.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", data_path.name), ("offset", str(offset)), ("length", str(length))):
                entry = kept.external_data.add()
                entry.key, entry.value = key, value
            offset += length
    path.write_bytes(light.SerializeToString())
    return [path, data_path]


def _copy_without(message: Any, field_name: str) -> Any:
    copy = type(message)()
    _copy_fields(message, copy, without=field_name)
    return copy


def _copy_fields(source: Any, target: Any, without: str) -> None:
    """Every field of ``source`` that is set, but ``without``, into ``target``."""
    for descriptor, value in source.ListFields():
        if descriptor.name == without:
            continue
        if hasattr(value, "extend"):  # a repeated field
            getattr(target, descriptor.name).extend(value)
        elif hasattr(value, "CopyFrom"):  # a message
            getattr(target, descriptor.name).CopyFrom(value)
        else:
            setattr(target, descriptor.name, value)


@contextmanager
def session_source(model: onnx.ModelProto | bytes | str | Path) -> Iterator[bytes | str]:
    """What ``ort.InferenceSession`` takes for ``model``: its bytes, or for a big model (above
    2 GB it must) the path of a temporary copy with external data (removed when the block ends;
    a session has read it by then)."""
    if not isinstance(model, onnx.ModelProto):
        yield str(model) if isinstance(model, Path) else model
        return
    if fits_in_one_file(model, min(SESSION_FROM_FILE_ABOVE_BYTES, PROTOBUF_LIMIT_BYTES)):
        yield model.SerializeToString()
        return
    with tempfile.TemporaryDirectory(prefix="fixport-large-") as folder:
        path = Path(folder) / "model.onnx"
        write_with_external_data(model, path)
        yield str(path)
