"""The plain path of a checkpoint folder (the fix script's support is its home)."""
from __future__ import annotations

from fixport.core.script_support.checkpoint_plain import (
    PLAIN_BATCH_DIM,
    PLAIN_CALL_FLAGS,
    PLAIN_COMPONENT,
    PLAIN_SECOND_SIZES,
    PLAIN_SEQUENCE_DIM,
    PlainForward,
    load_plain_checkpoint,
    plain_tensors,
)

__all__ = [
    "PLAIN_BATCH_DIM", "PLAIN_CALL_FLAGS", "PLAIN_COMPONENT", "PLAIN_SECOND_SIZES", "PLAIN_SEQUENCE_DIM",
    "PlainForward", "load_plain_checkpoint", "plain_tensors"
]
