"""An exported ONNX model whose weights are held once: on disk, not in memory beside torch's.

A real-size export holds its weights in torch already; a ``ModelProto`` with them inline would be a
second copy, and ONNX Runtime's session a third. So once a model's tensors pass
``WEIGHTS_ON_DISK_ABOVE_BYTES`` (float16 and bfloat16 ones counted twice: a CPU session holds them
as float32), its big initializers go to one data file in a temporary folder
of its own, right after the export, and the proto keeps the graph with ``external_data``
references. ONNX Runtime opens it from the proto's bytes and that folder
(:func:`fixport.core.onnx_io.ort_session.create_session`), and
:func:`fixport.core.onnx_io.onnx_files.save_model` writes the file from it, tensor by tensor.
Smaller models stay whole in memory, as before.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import onnx

from fixport.core.onnx_io.external_data import (
    SESSION_FROM_FILE_ABOVE_BYTES,
    all_tensors,
    tensor_bytes,
    with_external_data,
)

WEIGHTS_ON_DISK_ABOVE_BYTES = SESSION_FROM_FILE_ABOVE_BYTES
WEIGHTS_FILE = "weights.data"
EXPORT_FILE_NAME = "model.onnx"  # what an exporter writes into a weights folder, for read_export
FOLDER_PREFIX = "fixport-weights-"
WIDENED_ON_CPU = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


class WeightsFolder:
    """A temporary folder removed by :meth:`release` or when the last model using it goes, and only
    by the process that made it (a forked trial holds a copy of the object, never the folder). Its
    name carries that process's id, so the folders of a worker that was killed are removed later."""

    def __init__(self) -> None:
        _remove_orphans()
        self.path = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self._finalizer = weakref.finalize(self, _remove, self.path, os.getpid())

    def release(self) -> None:
        self._finalizer()


def _remove(path: Path, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        shutil.rmtree(path, ignore_errors=True)


def _remove_orphans() -> None:
    """Remove the weights folders of processes that are gone (a worker stopped on a timeout holds
    gigabytes there, and its finalizers never ran)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        owner = folder.name.removeprefix(FOLDER_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@dataclass(eq=False)
class OnnxModel:
    """An ONNX model: ``proto`` in memory, its external tensors in ``base_dir`` (None: all inline)."""

    proto: onnx.ModelProto
    base_dir: Path | None = None
    folder: WeightsFolder | None = None  # the temporary folder behind base_dir, when it is one

    @property
    def weights_on_disk(self) -> bool:
        return self.base_dir is not None

    def derived(self, proto: onnx.ModelProto) -> OnnxModel:
        """Another graph over the same weights (a copy with more outputs, a part of the graph)."""
        return OnnxModel(proto, self.base_dir, self.folder)

    def release(self) -> None:
        """Remove the temporary weights now (sessions already open keep what they read or mapped)."""
        if self.folder is not None:
            self.folder.release()


def weights_go_to_disk(weights: Iterable[tuple[int, int]]) -> bool:
    """Whether a model whose initializers are ``weights`` ((ONNX data type, bytes) each) keeps
    them on disk: when what an ONNX Runtime session on CPU holds of them passes the threshold.
    That is twice the bytes of a float16 or bfloat16 weight: the CPU provider casts float16 weights
    to float32 for its kernels (and keeps both), and Fixport widens bfloat16 ones itself."""
    return sum(2 * size if data_type in WIDENED_ON_CPU else size
               for data_type, size in weights) > WEIGHTS_ON_DISK_ABOVE_BYTES


def on_disk(model: onnx.ModelProto, folder: WeightsFolder | None = None) -> OnnxModel:
    """``model`` with its big initializers moved to ``folder`` (a new one by default) when they pass
    ``WEIGHTS_ON_DISK_ABOVE_BYTES`` in all; tensors already external stay where they are, in ``folder``.

    Returns a new, light proto: drop ``model`` to free its weights (protobuf keeps a cleared
    field's memory until the whole message goes)."""
    if folder is None and not weights_go_to_disk((t.data_type, tensor_bytes(t)) for t in model.graph.initializer):
        return OnnxModel(model)
    folder = folder or WeightsFolder()
    light = with_external_data(model, folder.path / WEIGHTS_FILE)
    return OnnxModel(light, folder.path, folder)


def read_export(path: Path, folder: WeightsFolder) -> OnnxModel:
    """The model torch wrote at ``path`` inside ``folder`` (its external data, if any, beside it),
    its weights kept on disk; the file itself is removed once read."""
    proto = onnx.load(str(path), load_external_data=False)
    path.unlink()
    return on_disk(proto, folder)


def beside_file(model: onnx.ModelProto, path: Path) -> OnnxModel:
    """A model read from ``path`` without its external data, which stays in the file's folder; a
    big model whose weights are all inline gets them moved to disk like an export's."""
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in all_tensors(model)):
        return OnnxModel(model, path.parent)
    return on_disk(model)
