"""One op called on the arguments it saw, as a module torch.export can capture on its own."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.utils import _pytree as pytree


class OpAlone(torch.nn.Module):
    """One FX node's op overload called on the arguments it saw; tensors are the module's inputs.
    ``used``: the outputs the model reads, by index (None: all of them)."""

    def __init__(self, target: Any, arguments: tuple[tuple, dict], used: tuple[int, ...] | None = None) -> None:
        super().__init__()
        self.target = target
        self.used = used
        leaves, self.spec = pytree.tree_flatten(arguments)
        self.tensor_slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        self.fixed = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]

    def arguments_for(self, tensors: Sequence[torch.Tensor]) -> tuple[tuple, dict]:
        """The node's (args, kwargs) with ``tensors`` in its tensors' places."""
        leaves = list(self.fixed)
        for slot, tensor in zip(self.tensor_slots, tensors):
            leaves[slot] = tensor
        return pytree.tree_unflatten(leaves, self.spec)

    def forward(self, *tensors: torch.Tensor) -> Any:
        args, kwargs = self.arguments_for(tensors)
        outputs = self.target(*args, **kwargs)
        if self.used is None:
            return outputs
        return tuple(outputs[index] for index in self.used)
