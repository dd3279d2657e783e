"""Saving and checking ONNX models: atomic, checked, external data above 2 GB."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from fixport.core.model.atomic_files import atomic_write_bytes
from fixport.core.model.errors import ExportError

PROTOBUF_LIMIT_BYTES = 2 * 1024**3 - 1024**2  # protobuf cannot serialise 2 GB; keep a margin


def check_model(model: onnx.ModelProto | str | Path) -> None:
    """Full ``onnx.checker`` check (with strict shape inference); ExportError on failure."""
    try:
        onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else str(model), full_check=True)
    except Exception as exc:
        raise ExportError(f"The exported model fails the ONNX checker: {exc}".strip(),
                          "A symbolic produced an invalid node; see the message for which one.") from exc


def save_model(model: onnx.ModelProto, path: str | Path) -> list[Path]:
    """Check and atomically save ``model``; returns the files written."""
    path = Path(path)
    if model.ByteSize() < PROTOBUF_LIMIT_BYTES:
        check_model(model)
        atomic_write_bytes(path, model.SerializeToString())
        return [path]
    return _save_with_external_data(model, path)


def _save_with_external_data(model: onnx.ModelProto, path: Path) -> list[Path]:
    data_name = f"{path.name}.data"
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fixport-") as temp_dir:
        temp_model = Path(temp_dir) / path.name
        onnx.save_model(model, str(temp_model), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data_name, size_threshold=1024)
        check_model(temp_model)
        os.replace(Path(temp_dir) / data_name, path.parent / data_name)
        os.replace(temp_model, path)
    return [path, path.parent / data_name]
