"""ONNX Runtime reading a model's weights from the mapping torch already holds (issue 20).

After a big export, torch's weights are mapped from the file the export wrote
(:mod:`fixport.core.exporters.dynamo.mapped_weights`). A session opened over that file would map it a
second time: the page cache holds one copy, but every resident page then counts twice in the
process's resident memory, and a real-size ``compare`` measured 1.6-1.9x a plain export's peak.
Handing ONNX Runtime arrays over torch's mapping (``SessionOptions.add_initializer``, which uses
the caller's memory as it is) leaves one mapping of each weight in the process.
"""
from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from fixport.core.onnx_io.external_data import external_place

# Kernels may load a weight with aligned vector instructions: only bytes starting at this alignment
# are shared (export files start their big tensors on 4 KB or 64 KB boundaries).
SHARED_ALIGNMENT = 64

AsWritten = Callable[[int], bool]  # offset -> whether the mapping's bytes there are still the file's
_mapped_files: dict[str, tuple[weakref.ref[np.ndarray], AsWritten]] = {}


def register_mapped_file(path: Path, data: np.ndarray, as_written: AsWritten) -> None:
    """Note that ``data`` (a uint8 array of the whole file, copy-on-write) maps ``path`` while it
    lives; ``as_written(offset)`` says whether the tensor there is unchanged (torch may write to
    a weight in place, and the session must run the file's)."""
    _mapped_files[os.path.realpath(path)] = (weakref.ref(data), as_written)


def mapped_file(path: Path) -> tuple[np.ndarray, AsWritten] | None:
    """The live mapping of ``path`` registered by :func:`register_mapped_file`, if any."""
    key = os.path.realpath(path)
    reference, as_written = _mapped_files.get(key, (None, None))
    data = reference() if reference is not None else None
    if data is None:
        _mapped_files.pop(key, None)
        return None
    return data, as_written


def shared_initializers(model: onnx.ModelProto, base_dir: Path) -> dict[str, ort.OrtValue]:
    """For each external initializer of ``model`` whose file is mapped already: its bytes there, as an
    OrtValue over that memory (no copy; bfloat16 as its 16-bit words, typed bfloat16). Tensors ONNX
    Runtime cannot take from numpy (float8, 4-bit), unaligned or past the mapping's end are left for
    ONNX Runtime to read."""
    shared: dict[str, ort.OrtValue] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        path, offset, length = external_place(tensor, base_dir)
        mapping, dtype = mapped_file(path), _numpy_dtype(tensor.data_type)
        if mapping is None or dtype is None or offset % SHARED_ALIGNMENT:
            continue
        data, as_written = mapping
        if offset + length > data.size or not as_written(offset):
            continue
        shape = tuple(tensor.dims)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != length:
            continue
        values = data[offset:offset + length].view(dtype).reshape(shape)
        shared[tensor.name] = (ort.OrtValue.ortvalue_from_numpy_with_onnx_type(values, tensor.data_type)
                               if tensor.data_type == onnx.TensorProto.BFLOAT16 else
                               ort.OrtValue.ortvalue_from_numpy(values))
    return shared


def _numpy_dtype(data_type: int) -> np.dtype | None:
    """The numpy type whose bytes hold ``data_type``'s, for the types ONNX Runtime takes from numpy."""
    if data_type == onnx.TensorProto.BFLOAT16:
        return np.dtype(np.uint16)
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(data_type))
    except (KeyError, TypeError, ValueError):
        return None
    return dtype if dtype.kind in "fiub" else None  # ml_dtypes' bfloat16 and float8 are kind "V"
