"""A model's attributes as they were, once an export that ran its forward() ends (issue 33, issue 46).

An export runs forward() on values that are not real tensors: torch.export's fake tensors, the
TorchScript trace's traced ones (a traced size is a tensor). A forward() that caches what it computes
on its modules (a detection head's anchors, kept with the shape they were made for) leaves those
values behind, and the worker's loaded model is shared by every export: the next capture then
compares its sizes with a traced tensor, a data-dependent value it cannot decide. Part of the fix
script's support (the dynamo exporter's part uses it).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

# What nn.Module keeps in these is torch.export's to manage (a buffer assigned in forward() is
# copied back by torch); everything else in a module's __dict__ is the model's own state.
_MODULE_BOOKKEEPING = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})


@contextmanager
def attributes_kept(model: torch.nn.Module) -> Iterator[None]:
    """Every submodule's own attributes, and the contents of its list and dict attributes, as
    they were on entry, once the block ends (issue 33).

    torch.export runs forward() on fake tensors. A forward() that caches what it computes on its
    modules (a detection head's anchors and strides, kept with the shape they were made for) leaves
    those fake tensors behind: torch puts back the attributes a module had, but not the ones
    forward() added over a class default. The next torch run then returns fake tensors, and the
    next capture takes them for constants that cannot be written."""
    snapshots = [(module, _snapshot(module)) for module in model.modules()]
    try:
        yield
    finally:
        for module, (attributes, contents) in snapshots:
            _restore(module, attributes, contents)


def _snapshot(module: torch.nn.Module) -> tuple[dict[str, Any], dict[str, Any]]:
    attributes = {k: v for k, v in module.__dict__.items() if k not in _MODULE_BOOKKEEPING}
    contents = {k: (list(v) if isinstance(v, list) else dict(v)) for k, v in attributes.items()
                if type(v) in (list, dict)}
    return attributes, contents


def _restore(module: torch.nn.Module, attributes: dict[str, Any], contents: dict[str, Any]) -> None:
    state = module.__dict__
    for name in [k for k in state if k not in _MODULE_BOOKKEEPING and k not in attributes]:
        del state[name]
    for name, value in attributes.items():
        if state.get(name) is not value:
            state[name] = value
        if name in contents and not _same_items(value, contents[name]):
            value.clear()
            if isinstance(value, list):
                value.extend(contents[name])
            else:
                value.update(contents[name])


def _same_items(now: list | dict, before: list | dict) -> bool:
    """Whether a container holds the same objects (by identity: tensors do not compare to a bool)."""
    if isinstance(now, dict):
        return now.keys() == before.keys() and all(now[k] is before[k] for k in now)
    return len(now) == len(before) and all(a is b for a, b in zip(now, before))
