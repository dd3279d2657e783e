"""Saving and checking ONNX models: atomic, checked, external data above 2 GB."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from fixport.core.foundation.errors import ModelLoadError
from fixport.core.onnx_io.external_data import (
    SESSION_FROM_FILE_ABOVE_BYTES,
    fits_in_one_file,
    without_weight_bytes,
    write_in_one_file,
    write_with_external_data,
)
from fixport.core.onnx_io.onnx_model import OnnxModel
from fixport.core.project.atomic_files import atomic_write, output_mode, write_error
from fixport.core.words.errors import ExportError


def check_model(model: onnx.ModelProto | str | Path) -> None:
    """Full ``onnx.checker`` check (with strict shape inference); ExportError on failure."""
    try:
        onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else str(model), full_check=True)
    except Exception as exc:
        raise ExportError(f"The exported model fails the ONNX checker: {exc}".strip(),
                          "A symbolic produced an invalid node; see the message for which one.") from exc


def check_graph(model: onnx.ModelProto) -> None:
    """:func:`check_model` on ``model``'s nodes, types and shapes without its weights' bytes (a big
    model's file checked as written would make the checker hold the weights once or twice more:
    at real size, gigabytes above the export itself)."""
    with tempfile.TemporaryDirectory(prefix="fixport-check-") as folder:
        placeholder = Path(folder) / "weights-not-read"
        placeholder.touch()
        graph_only = Path(folder) / "model.onnx"
        graph_only.write_bytes(without_weight_bytes(model, placeholder.name).SerializeToString())
        check_model(graph_only)


def save_model(model: OnnxModel | onnx.ModelProto, path: str | Path) -> list[Path]:
    """Check and atomically save ``model``: one file below protobuf's 2 GB, else the model file and
    its ``.data`` beside it (weights kept on disk are copied from there); returns the files written."""
    path = Path(path)
    proto, base_dir = (model.proto, model.base_dir) if isinstance(model, OnnxModel) else (model, None)
    big = not fits_in_one_file(proto, SESSION_FROM_FILE_ABOVE_BYTES, base_dir)
    if big:  # its graph checked before it is written, its weights never read back
        check_graph(proto)
    if fits_in_one_file(proto, base_dir=base_dir):
        # A small one is checked as written, from the file: the serialised bytes live only while
        # they are written.
        write = ((lambda stream: write_in_one_file(proto, base_dir, stream)) if base_dir is not None
                 else (lambda stream: stream.write(proto.SerializeToString())))
        atomic_write(path, write, verify=None if big else check_model)
        return [path]
    return _save_with_external_data(proto, path, base_dir, check_written=not big)


def save_model_with_external_data(model: OnnxModel, path: str | Path, link_weights: bool = False) -> list[Path]:
    """Check and atomically save ``model`` with its weights in ``<name>.data`` beside it, whatever its size
    (the layout transformers' exporters write and read back). ``link_weights``: a copy only Fixport
    reads, whose weights file may be the model's own, hard-linked (see ``with_external_data``), and
    which onnx's checker is not run on (it refuses a data file with more than one link)."""
    return _save_with_external_data(model.proto, Path(path), model.base_dir, check_written=not link_weights,
                                    link=link_weights)


def _save_with_external_data(model: onnx.ModelProto, path: Path, base_dir: Path | None,
                             check_written: bool = True, link: bool = False) -> list[Path]:
    """Model and data written in a temporary folder beside the target, then renamed into place
    (through a symlink to its target, keeping the target's mode, like :func:`atomic_write_bytes`)."""
    target = Path(os.path.realpath(Path(path).expanduser()))
    data_name = f"{target.name}.data"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = output_mode(target)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fixport-") as temp_dir:
            temp_model = Path(temp_dir) / target.name
            write_with_external_data(model, temp_model, data_name, base_dir, link)
            if check_written:
                check_model(temp_model)
            for written in (temp_model, Path(temp_dir) / data_name):
                written.chmod(mode)
            os.replace(Path(temp_dir) / data_name, target.parent / data_name)
            os.replace(temp_model, target)
    except OSError as exc:
        raise write_error(Path(path), exc) from exc
    return [path, target.parent / data_name]


def read_model_file(path: str | Path, role: str = "ONNX file", load_external_data: bool = False) -> onnx.ModelProto:
    """An ONNX model that has a graph with nodes, or a ModelLoadError saying what is wrong with the file.

    ``onnx.load`` reads a 0-byte or truncated file as an empty model without complaint.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"The {role} {path} is missing or not a regular file.", "Check the path.")
    hint = "Check that the file is complete and really ONNX (torch.onnx.export or onnx.save writes one)."
    if path.stat().st_size == 0:
        raise ModelLoadError(f"The {role} {path.name} is empty (0 bytes).", hint)
    try:
        model = onnx.load(str(path), load_external_data=load_external_data)
    except Exception as exc:
        raise ModelLoadError(f"The {role} {path.name} is not a readable ONNX model: "
                             f"{str(exc).splitlines()[0][:200]}", hint) from exc
    if not model.HasField("graph") or not model.graph.node:
        raise ModelLoadError(f"The {role} {path.name} holds no graph (no nodes): it is not a usable ONNX model.",
                             hint)
    return model
