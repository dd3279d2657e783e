"""The dtype a checkpoint folder was exported in, and what each ONNX Runtime provider does with it."""
from __future__ import annotations

from fixport.core.loaders.loading import LoadedModel
from fixport.core.onnx_io.dtype_speed import export_dtype
from fixport.core.words.export_dtype import ExportDtype


def checkpoint_export_dtype(loaded: LoadedModel) -> ExportDtype | None:
    """The record for a checkpoint folder (None for a model file, whose build() chooses its dtype)."""
    info = loaded.checkpoint
    return None if info is None else export_dtype(info.dtype, info.checkpoint_dtype, info.chosen_dtype)
