"""Models above protobuf's 2 GB: their weights written beside the model file, as onnx and torch.onnx do.

A ModelProto cannot be serialised once it passes 2 GB, so ONNX Runtime, the checker and the saved
file all take such a model as a path to a model file whose tensors live in one ``.data`` file
beside it. :func:`write_with_external_data` writes that pair without changing or copying the
model in memory (``onnx.save_model(save_as_external_data=True)`` empties the caller's tensors), and
:func:`session_source` gives ONNX Runtime bytes for a small model or such a path for a large one.
A model whose weights are already on disk (:mod:`fixport.core.onnx_io.onnx_model`) is written from
there, tensor by tensor: as such a pair, or as one file by :func:`write_in_one_file`.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import onnx
from google.protobuf.message import EncodeError

PROTOBUF_LIMIT_BYTES = 2 * 1024**3 - 1024**2  # protobuf cannot serialise 2 GB; keep a margin
# Above this, ONNX Runtime opens a model from a file with external data instead of from bytes: the
# serialised bytes and ORT's parsed copy of them would each hold the weights once more.
SESSION_FROM_FILE_ABOVE_BYTES = 256 * 1024**2
EXTERNAL_TENSOR_MIN_BYTES = 1024  # smaller tensors stay in the model file (as onnx's own default)
COPY_CHUNK_BYTES = 64 * 1024**2
ALIGNMENT_BYTES = 4096  # external tensors start on a page, so ONNX Runtime can map the file
# A weights file copied whole for a model that names at most this share of it as nobody's bytes
# (alignment padding: onnx_ir aligns big tensors to 64 KB); more, and its tensors are copied one by one.
UNREFERENCED_SHARE = 0.05


def fits_in_one_file(model: onnx.ModelProto, limit: int | None = None, base_dir: Path | None = None) -> bool:
    """Whether ``model`` serialises to under ``limit`` bytes, by default protobuf's 2 GB (its
    ``ByteSize`` itself raises past 2 GB), its external tensors (in ``base_dir``) counted in."""
    limit = PROTOBUF_LIMIT_BYTES if limit is None else limit
    if sum(tensor_bytes(tensor, base_dir) for tensor in all_tensors(model)) >= limit:
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


def write_with_external_data(model: onnx.ModelProto, path: Path, data_name: str | None = None,
                             base_dir: Path | None = None, link: bool = False) -> list[Path]:
    """Write ``model`` to ``path`` with its initializers' bytes in ``data_name`` (beside it); the
    model in memory is not touched. Tensors already external are read from ``base_dir``; ``link``:
    see :func:`with_external_data`. Returns the two files written."""
    data_path = path.parent / (data_name or f"{path.name}.data")
    path.write_bytes(with_external_data(model, data_path, base_dir, link).SerializeToString())
    return [path, data_path]


def with_external_data(model: onnx.ModelProto, data_path: Path, base_dir: Path | None = None,
                       link: bool = False) -> onnx.ModelProto:
    """A copy of ``model`` whose big initializers name their place in ``data_path`` instead of
    holding their bytes, which are written there: the weights are never held twice (protobuf keeps
    a cleared field's memory until the whole message goes, so emptying ``model`` would not help).

    A tensor already external is copied into ``data_path`` from ``base_dir``: the whole file where
    the model's tensors fill one (:func:`weights_file`), else chunk by chunk; with no ``base_dir``, or
    when it is ``data_path``'s own folder, its reference is kept as it is. ``link``: that whole file
    may be hard-linked instead of copied, where nothing is added to it, for a copy only Fixport
    reads (a file written in place through the link would change the model's own weights)."""
    copy_external = base_dir is not None and Path(base_dir).resolve() != data_path.parent.resolve()
    whole_file = weights_file(model, Path(base_dir)) if copy_external else None
    if whole_file is not None:
        _copy_whole(whole_file, data_path, link=link and not _has_inline_weights(model))
    light = _copy_without(model, "graph")
    _copy_fields(model.graph, light.graph, without="initializer")
    with ExternalDataWriter(data_path) as writer:  # tensors written now go after the copied file
        for tensor in model.graph.initializer:
            kept = light.graph.initializer.add()
            external = tensor.data_location == onnx.TensorProto.EXTERNAL
            if (external and not copy_external) or (not external and len(tensor.raw_data) < EXTERNAL_TENSOR_MIN_BYTES):
                kept.CopyFrom(tensor)
                continue
            if external and whole_file is not None:
                kept.CopyFrom(tensor)
                _relocate(kept, data_path.name)
                continue
            _copy_fields(tensor, kept, without="raw_data")
            del kept.external_data[:]
            if external:
                writer.add(kept, lambda data, tensor=tensor: _copy_external_bytes(tensor, Path(base_dir), data))
            else:
                writer.add(kept, lambda data, tensor=tensor: data.write(tensor.raw_data))
    return light


def weights_file(model: onnx.ModelProto, base_dir: Path) -> Path | None:
    """The one file in ``base_dir`` that holds all of ``model``'s external initializers, when they
    fill it (at most UNREFERENCED_SHARE of it is padding or bytes no tensor names): copied whole,
    it is their data as they are, at the same offsets. None when there are several or none."""
    places = [external_place(tensor, base_dir) for tensor in model.graph.initializer
              if tensor.data_location == onnx.TensorProto.EXTERNAL]
    files = {path for path, _, _ in places}
    if len(files) != 1:
        return None
    (path,) = files
    try:
        size = path.stat().st_size
    except OSError:
        return None
    referenced = sum(length for _, _, length in places)
    return path if referenced <= size and size - referenced <= UNREFERENCED_SHARE * size else None


def _copy_whole(source: Path, target: Path, link: bool) -> None:
    """``source`` at ``target``: hard-linked where asked and the file system allows, else copied by
    the kernel (a reflink where the file system can), at disk speed."""
    if link:
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another file system, or one without hard links
    shutil.copyfile(source, target)


def _has_inline_weights(model: onnx.ModelProto) -> bool:
    """Whether saving ``model`` with external data writes some of its tensors' bytes anew."""
    return any(tensor.data_location != onnx.TensorProto.EXTERNAL and len(tensor.raw_data) >= EXTERNAL_TENSOR_MIN_BYTES
               for tensor in model.graph.initializer)


def _relocate(tensor: onnx.TensorProto, location: str) -> None:
    """Point an external tensor at ``location``, its offset and length kept."""
    for entry in tensor.external_data:
        if entry.key == "location":
            entry.value = location


class ExternalDataWriter:
    """Appends tensors' bytes to one data file (after what it holds), each at an offset aligned
    to ALIGNMENT_BYTES, and points their TensorProtos there."""

    def __init__(self, data_path: Path) -> None:
        self.data_path = data_path
        self.offset = data_path.stat().st_size if data_path.exists() else 0
        self._data: BinaryIO | None = None

    def __enter__(self) -> ExternalDataWriter:
        self._data = open(self.data_path, "ab")
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._data is not None
        self._data.close()

    def add(self, tensor: onnx.TensorProto, write: Callable[[BinaryIO], int]) -> None:
        """Write one tensor's bytes with ``write`` (returns the count) and make ``tensor`` refer to them."""
        assert self._data is not None
        padding = -self.offset % ALIGNMENT_BYTES
        self._data.write(b"\0" * padding)
        self.offset += padding
        length = write(self._data)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", self.data_path.name), ("offset", str(self.offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.offset += length


def external_place(tensor: onnx.TensorProto, base_dir: Path | None) -> tuple[Path, int, int]:
    """(file, offset, length) of an external tensor's bytes; a missing length runs to the file's end."""
    entries = {entry.key: entry.value for entry in tensor.external_data}
    path = Path(base_dir or ".") / entries["location"]
    offset = int(entries.get("offset", 0))
    length = int(entries["length"]) if "length" in entries else path.stat().st_size - offset
    return path, offset, length


def tensor_bytes(tensor: onnx.TensorProto, base_dir: Path | None = None) -> int:
    """The size of a tensor's raw bytes, inline or external (other storage fields count as 0)."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return len(tensor.raw_data)
    entries = {entry.key: entry.value for entry in tensor.external_data}
    return int(entries["length"]) if "length" in entries else external_place(tensor, base_dir)[2]


def read_external_chunks(tensor: onnx.TensorProto, base_dir: Path | None) -> Iterator[bytes]:
    """An external tensor's bytes, COPY_CHUNK_BYTES at a time (a weight can be gigabytes)."""
    path, offset, length = external_place(tensor, base_dir)
    with open(path, "rb") as source:
        source.seek(offset)
        while length > 0:
            chunk = source.read(min(COPY_CHUNK_BYTES, length))
            if not chunk:
                raise OSError(f"{path.name} ends before tensor {tensor.name}'s bytes do")
            length -= len(chunk)
            yield chunk


def _copy_external_bytes(tensor: onnx.TensorProto, base_dir: Path, data: Any) -> int:
    return sum(data.write(chunk) for chunk in read_external_chunks(tensor, base_dir))


def write_in_one_file(model: onnx.ModelProto, base_dir: Path | None, stream: BinaryIO) -> None:
    """``model`` as one file, its external tensors (in ``base_dir``) inline again, written tensor by
    tensor so no copy of the weights is made in memory.

    Protobuf merges a message field that occurs twice and appends to its repeated fields, so the
    file is the model without initializers, then per initializer ``graph { initializer { ... } }``:
    a valid encoding of the whole model, which onnx and ONNX Runtime read like any other."""
    light = _copy_without(model, "graph")
    _copy_fields(model.graph, light.graph, without="initializer")
    stream.write(light.SerializeToString())
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            piece = onnx.ModelProto()
            piece.graph.initializer.add().CopyFrom(tensor)
            stream.write(piece.SerializeToString())
            continue
        head = _copy_without(tensor, "raw_data")
        del head.external_data[:]
        head.ClearField("data_location")
        length = external_place(tensor, base_dir)[2]
        fields = head.SerializeToString() + _field_header(_RAW_DATA_FIELD, length)
        initializer = _field_header(_INITIALIZER_FIELD, len(fields) + length)
        stream.write(_field_header(_GRAPH_FIELD, len(initializer) + len(fields) + length) + initializer + fields)
        for chunk in read_external_chunks(tensor, base_dir):
            stream.write(chunk)


def without_weight_bytes(model: onnx.ModelProto, location: str) -> onnx.ModelProto:
    """A copy of ``model`` whose big initializers keep their name, type and dims but, in place of
    their bytes, refer to the file ``location`` (any file: nothing reads it). For checks of the
    graph that must not get a copy of the weights."""
    light = _copy_without(model, "graph")
    _copy_fields(model.graph, light.graph, without="initializer")
    for tensor in model.graph.initializer:
        kept = light.graph.initializer.add()
        if tensor.data_location != onnx.TensorProto.EXTERNAL and len(tensor.raw_data) < EXTERNAL_TENSOR_MIN_BYTES:
            kept.CopyFrom(tensor)  # small ones stay: shape inference reads Reshape's shapes from them
            continue
        _copy_fields(tensor, kept, without="raw_data")
        del kept.external_data[:]
        kept.data_location = onnx.TensorProto.EXTERNAL
        entry = kept.external_data.add()
        entry.key, entry.value = "location", location
    return light


_GRAPH_FIELD = onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number
_INITIALIZER_FIELD = onnx.GraphProto.DESCRIPTOR.fields_by_name["initializer"].number
_RAW_DATA_FIELD = onnx.TensorProto.DESCRIPTOR.fields_by_name["raw_data"].number


def _field_header(number: int, length: int) -> bytes:
    """The wire-format key and length of a length-delimited field."""
    return _varint(number << 3 | 2) + _varint(length)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


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
