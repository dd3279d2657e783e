"""The plain path for a checkpoint folder: the model's own forward as one component, ``model``.

For a transformers without ``transformers.exporters`` (older than 5), and on request
(``--component model`` on a generative task, which transformers' exporter splits into prefill and
decode): the inputs come from the forward signature and the config (``inputs.py``), the
model is called with its cache off and its outputs as a dict of tensors, and the dims that follow
the batch size and the sequence length are found from the inputs made at a second size. No patches,
no decomposition, no generation check: those are transformers' exporter's.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..inputs import InputChoices, flat_model
from .inputs import ExampleSizes, example_inputs, forward_parameters

PLAIN_COMPONENT = "model"  # transformers' name for a one-graph export
PLAIN_SECOND_SIZES = ExampleSizes(batch=3, sequence=5)  # a second set of inputs: which dims follow batch and length
PLAIN_BATCH_DIM = "batch"
PLAIN_SEQUENCE_DIM = "seq"
# forward() flags for one graph of plain tensors: no cache object out, a ModelOutput's keys for the names
PLAIN_CALL_FLAGS = {"use_cache": False, "return_dict": True}


class PlainForward(torch.nn.Module):
    """The model called with its cache off; its outputs as a flat dict of tensors (``logits``,
    ``hidden_states.0``), named by their keys."""

    def __init__(self, model: torch.nn.Module, flags: dict[str, Any]) -> None:
        super().__init__()
        self.model = model
        self.flags = flags

    def forward(self, **kwargs: Any) -> dict[str, torch.Tensor]:
        return plain_tensors(self.model(**kwargs, **self.flags))


def plain_tensors(value: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor in a ModelOutput, dict, tuple or list, named by its keys and indices."""
    if isinstance(value, torch.Tensor):
        return {prefix or "output": value}
    items: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping) or hasattr(value, "items"):
        items = list(value.items())
    elif isinstance(value, (tuple, list)):
        items = list(enumerate(value))
    found: dict[str, torch.Tensor] = {}
    for key, item in items:
        found.update(plain_tensors(item, f"{prefix}.{key}" if prefix else str(key)))
    return found


def load_plain_checkpoint(path: Path, model: torch.nn.Module, config: Any, inputs: InputChoices,
                          ) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list[str], dict[str, Any], Any,
                                     dict[str, Any]]:
    """(module, example tensors, input names, settings, structure, forward kwargs) of the one component."""
    accepted = forward_parameters(model)
    flags = {name: value for name, value in PLAIN_CALL_FLAGS.items() if name in accepted}
    kwargs = example_inputs(model, config, ExampleSizes(), for_generation=False, given=inputs.specs,
                            seed=inputs.seed)
    flat, tensors, structure = flat_model(PlainForward(model, flags), (), dict(kwargs), path.name)
    names = list(structure.names) if structure is not None else list(kwargs)
    second = example_inputs(model, config, PLAIN_SECOND_SIZES, for_generation=False,
                            given=_at_second_batch(inputs), seed=inputs.seed)
    settings = {"export_options": {"dynamic_axes": _dims_that_moved(names, tensors, second)}}
    return flat, tensors, names, settings, structure, dict(kwargs)


def _at_second_batch(inputs: InputChoices) -> list:
    """The user's --input specs at the second size's batch (their other dims as given)."""
    return [type(spec)(spec.name, (PLAIN_SECOND_SIZES.batch, *spec.shape[1:]), spec.dtype) if spec.shape else spec
            for spec in inputs.specs]


def _dims_that_moved(names: list[str], tensors: tuple[torch.Tensor, ...],
                     second: dict[str, Any]) -> dict[str, dict[int, str]]:
    """``batch`` and ``seq`` where an input's dim moved with the batch size or the sequence length."""
    first, axes = ExampleSizes(), {}
    for name, tensor in zip(names, tensors):
        other = second.get(name)
        if not isinstance(other, torch.Tensor) or other.dim() != tensor.dim():
            continue
        for axis, (size, moved) in enumerate(zip(tensor.shape, other.shape)):
            if (size, moved) == (first.batch, PLAIN_SECOND_SIZES.batch):
                axes.setdefault(name, {})[axis] = PLAIN_BATCH_DIM
            elif (size, moved) == (first.sequence, PLAIN_SECOND_SIZES.sequence):
                axes.setdefault(name, {})[axis] = PLAIN_SEQUENCE_DIM
            elif size != moved:
                axes.setdefault(name, {})[axis] = f"{name}_dim{axis}"
    return axes
