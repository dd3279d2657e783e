"""Example inputs for a checkpoint, made from its forward signature and its config.

Each input is made by what it is (token ids within the vocabulary, an image of the config's size,
mel features as long as the encoder takes), never by architecture; an input the config does not
size is named to the user, with the ``--input`` that gives it. Sizes are chosen so that the batch
and the sequence differ from every size in a tiny config, and a prompt for generation is
left-padded in one row so the exported graphs take an attention mask.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..errors import MissingInputsError
from ..inputs import InputSpec, random_inputs
from .tasks import IMAGE_INPUT

EXAMPLE_BATCH = 2
EXAMPLE_SEQUENCE = 7
PROMPT_PADDING = 2  # left padding of the first prompt row
AUDIO_SAMPLES = 8000  # half a second at 16 kHz: enough for a speech encoder's convolutions
INPUT_SEED = 0
TEXT_INPUT = "input_ids"
MASK_INPUT = "attention_mask"
FEATURES_INPUT = "input_features"
AUDIO_INPUT = "input_values"


@dataclass(frozen=True)
class ExampleSizes:
    """The batch and sequence the example inputs are made at (a second set finds the dims that follow them)."""

    batch: int = EXAMPLE_BATCH
    sequence: int = EXAMPLE_SEQUENCE


def example_inputs(model: torch.nn.Module, config: Any, sizes: ExampleSizes, *, for_generation: bool,
                   given: list[InputSpec] | None = None, seed: int = INPUT_SEED) -> dict[str, Any]:
    """The keyword inputs to call (or, for generation, to ``generate``) ``model`` with."""
    generator = torch.Generator().manual_seed(seed)
    accepted = forward_parameters(model)
    main = getattr(model, "main_input_name", TEXT_INPUT)
    wanted = [main] + [name for name in (TEXT_INPUT, IMAGE_INPUT) if name != main and name in accepted
                       and not for_generation and _can_make(name, config)]
    inputs: dict[str, Any] = {}
    given_by_name = {spec.name: spec for spec in given or []}
    for name in wanted:
        if name in given_by_name:
            continue
        inputs[name] = _make(name, config, sizes, generator, model)
        if name == TEXT_INPUT and MASK_INPUT in accepted:
            inputs[MASK_INPUT] = _mask(sizes, left_padded=for_generation)
    inputs.update(_given_tensors(list(given_by_name.values()), config, seed))
    _refuse_missing_required(model, accepted, inputs)
    return inputs


def forward_parameters(model: torch.nn.Module) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return {}


def _can_make(name: str, config: Any) -> bool:
    if name == TEXT_INPUT:
        return config_value(config, "vocab_size") is not None
    if name == IMAGE_INPUT:
        return config_value(config, "image_size") is not None
    return False


def _make(name: str, config: Any, sizes: ExampleSizes, generator: torch.Generator,
          model: torch.nn.Module) -> torch.Tensor:
    batch = sizes.batch
    if name == TEXT_INPUT:
        vocab = _needed(config, "vocab_size", name, f"{batch}x{sizes.sequence}:int64")
        # Ids from 1: id 0 is often padding, which some models mask themselves.
        return torch.randint(1, int(vocab), (batch, sizes.sequence), generator=generator)
    if name == IMAGE_INPUT:
        size = _needed(config, "image_size", name, f"{batch}x3x224x224")
        height, width = (size, size) if isinstance(size, int) else tuple(size)[-2:]
        channels = config_value(config, "num_channels") or 3
        return torch.randn(batch, int(channels), int(height), int(width), generator=generator)
    if name == FEATURES_INPUT:
        bins = _needed(config, "num_mel_bins", name, f"{batch}x80x3000")
        positions = _needed(config, "max_source_positions", name, f"{batch}x{bins}x3000")
        # The encoder's convolutions halve the frames to its positions.
        return torch.randn(batch, int(bins), 2 * int(positions), generator=generator)
    if name == AUDIO_INPUT:
        return torch.randn(batch, AUDIO_SAMPLES, generator=generator)
    raise MissingInputsError(f"The model's main input {name} cannot be made from its config.json.",
                         f"Give it with --input {name}=DIMS[:DTYPE] (the Example inputs dialog in the window).")


def _mask(sizes: ExampleSizes, *, left_padded: bool) -> torch.Tensor:
    """Ones, with padding in the first row: on the left of a prompt (generate() passes no mask for an
    unpadded one, and the exported graphs would take none), on the right of a batch of text."""
    mask = torch.ones(sizes.batch, sizes.sequence, dtype=torch.int64)
    if left_padded:
        mask[0, :PROMPT_PADDING] = 0
    elif sizes.batch > 1:
        mask[0, -PROMPT_PADDING:] = 0
    return mask


def _needed(config: Any, field: str, name: str, example_dims: str) -> Any:
    value = config_value(config, field)
    if value is None:
        raise MissingInputsError(f"The model takes {name}, and its config.json has no {field} to size it.",
                             f"Give it with --input {name}={example_dims} (the Example inputs dialog in the "
                             "window).")
    return value


def config_value(config: Any, field: str) -> Any:
    """``field`` of the config or, for a composite model, of its first sub-config that has it."""
    value = getattr(config, field, None)
    if value is not None:
        return value
    for child in vars(config).values():
        if hasattr(child, "to_dict") and hasattr(child, "model_type"):
            value = getattr(child, field, None)
            if value is not None:
                return value
    return None


def _given_tensors(specs: list[InputSpec], config: Any, seed: int) -> dict[str, torch.Tensor]:
    """``--input`` specs as tensors: token ids within the vocabulary, a mask of ones, else random."""
    tensors: dict[str, torch.Tensor] = {}
    for name, array in random_inputs(specs, seed).items():
        tensor = torch.from_numpy(np.ascontiguousarray(array))
        if name == MASK_INPUT:
            tensor = torch.ones_like(tensor)
        elif name == TEXT_INPUT and config_value(config, "vocab_size"):
            generator = torch.Generator().manual_seed(seed)
            tensor = torch.randint(1, int(config_value(config, "vocab_size")), tuple(tensor.shape),
                                   generator=generator, dtype=tensor.dtype)
        tensors[name] = tensor
    return tensors


def _refuse_missing_required(model: torch.nn.Module, accepted: dict[str, inspect.Parameter],
                             inputs: dict[str, Any]) -> None:
    """forward() parameters without a default that no input fills: named, with how to give them."""
    missing = [name for name, p in accepted.items()
               if p.default is inspect.Parameter.empty and name not in inputs
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if missing:
        raise MissingInputsError(f"{type(model).__name__}.forward() needs {', '.join(missing)}, which Fixport cannot "
                             "make from config.json.",
                             f"Give {'it' if len(missing) == 1 else 'them'} with --input {missing[0]}=DIMS[:DTYPE] "
                             "(the Example inputs dialog in the window).")
