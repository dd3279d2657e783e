"""Example inputs of a checkpoint's model (the fix script's support is its home)."""
from __future__ import annotations

from fixport.core.script_support.checkpoint_inputs import (
    AUDIO_INPUT,
    AUDIO_SAMPLES,
    EXAMPLE_BATCH,
    EXAMPLE_SEQUENCE,
    FEATURES_INPUT,
    IMAGE_INPUT,
    INPUT_SEED,
    MASK_INPUT,
    PROMPT_PADDING,
    TEXT_INPUT,
    ExampleSizes,
    config_value,
    example_inputs,
    forward_parameters,
)

__all__ = [
    "AUDIO_INPUT", "AUDIO_SAMPLES", "EXAMPLE_BATCH", "EXAMPLE_SEQUENCE", "ExampleSizes", "FEATURES_INPUT",
    "IMAGE_INPUT", "INPUT_SEED", "MASK_INPUT", "PROMPT_PADDING", "TEXT_INPUT", "config_value",
    "example_inputs", "forward_parameters"
]
