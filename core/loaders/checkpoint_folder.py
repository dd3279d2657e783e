"""A transformers checkpoint folder opened by path (the fix script's support is its home)."""
from __future__ import annotations

from fixport.core.script_support.checkpoints import (
    BATCH_DIM,
    DECODE_COMPONENT,
    ENCODER_LENGTH_DIM,
    LATER_STEP,
    ONNX_PATCHES,
    PAST_DIM,
    PROMPT_LENGTH_DIM,
    SECOND_SIZES,
    SINGLE_COMPONENT,
    CheckpointInfo,
    PatchedForExport,
    exporter_utils_register,
    exporters_module,
    load_checkpoint_folder,
)

__all__ = [
    "BATCH_DIM", "CheckpointInfo", "DECODE_COMPONENT", "ENCODER_LENGTH_DIM", "LATER_STEP", "ONNX_PATCHES",
    "PAST_DIM", "PROMPT_LENGTH_DIM", "PatchedForExport", "SECOND_SIZES", "SINGLE_COMPONENT",
    "exporter_utils_register", "exporters_module", "load_checkpoint_folder"
]
