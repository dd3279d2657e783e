"""Models above protobuf's 2 GB: their weights written beside the model file, as onnx and torch.onnx do.

A ModelProto cannot be serialised once it passes 2 GB, so ONNX Runtime, the checker and the saved
file all take such a model as a path to a model file whose tensors live in one ``.data`` file
beside it. :func:`write_with_external_data` writes that pair without changing the model in memory
(``onnx.save_model(save_as_external_data=True)`` empties the caller's tensors), and
:func:`session_source` gives ONNX Runtime bytes for a small model or such a path for a large one.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
    """Write ``model`` to ``path`` with its tensors' bytes in ``data_name`` (beside it); the model
    in memory is left as it was. Returns the two files written.

    Each tensor's bytes are written and dropped from the model, the model file is written without
    them, and then they are read back from the data file: the weights are never held twice (a
    tensor's ``raw_data`` read from Python is a copy of it)."""
    data_path = path.parent / (data_name or f"{path.name}.data")
    moved: list[tuple[onnx.TensorProto, int, int, bool]] = []  # tensor, offset, length, whether it named a location
    offset = 0
    try:
        with open(data_path, "wb") as data:
            for tensor in all_tensors(model):
                if tensor.data_location == onnx.TensorProto.EXTERNAL or not tensor.HasField("raw_data") \
                        or len(tensor.raw_data) < EXTERNAL_TENSOR_MIN_BYTES:
                    continue
                padding = -offset % 4096  # aligned, so ONNX Runtime can map the file
                data.write(b"\0" * padding)
                offset += padding
                length = data.write(tensor.raw_data)
                moved.append((tensor, offset, length, tensor.HasField("data_location")))
                tensor.ClearField("raw_data")
                tensor.data_location = onnx.TensorProto.EXTERNAL
                for key, value in (("location", data_path.name), ("offset", str(offset)), ("length", str(length))):
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, value
                offset += length
        path.write_bytes(model.SerializeToString())
    finally:
        _read_back(moved, data_path)
    return [path, data_path]


def _read_back(moved: list[tuple[onnx.TensorProto, int, int, bool]], data_path: Path) -> None:
    """Put the moved tensors' bytes back into the model, as it was before."""
    if not moved:
        return
    with open(data_path, "rb") as data:
        for tensor, offset, length, named_location in moved:
            data.seek(offset)
            raw = data.read(length)
            if len(raw) != length:  # the data file was not written whole (a full disk): say so, never corrupt
                raise OSError(f"{data_path} holds {len(raw)} of a tensor's {length} bytes; the disk may be full")
            tensor.raw_data = raw
            del tensor.external_data[:]
            if named_location:
                tensor.data_location = onnx.TensorProto.DEFAULT
            else:
                tensor.ClearField("data_location")


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
