"""One model per checkpoint folder, class and dtype in a process.

transformers' exporter exports a decoder's prefill and decode from the same model. Fixport loads each
component as its own LoadedModel, and a command that needs both (compare's generation check, a
window switching components) would otherwise hold the weights twice: a 1.5 B bfloat16 folder is
3.1 GB more. The model is shared while a component holds it, and loaded afresh once the folder's
files change.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from pathlib import Path

import torch

WEIGHT_PATTERNS = ("config.json", "*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")

_models: dict[tuple, weakref.ref[torch.nn.Module]] = {}


def shared_model(path: Path, auto_class: type, dtype: str, load: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """The model ``load()`` loads from ``path`` with ``auto_class`` in ``dtype``: the one already loaded
    in this process where a component still holds it and the folder's files are unchanged."""
    key = (str(path.resolve()), f"{auto_class.__module__}.{auto_class.__qualname__}", dtype, _files_of(path))
    for stale in [k for k, reference in _models.items() if reference() is None]:
        del _models[stale]
    reference = _models.get(key)
    model = reference() if reference is not None else None
    if model is None:
        model = load()
        _models[key] = weakref.ref(model)
    return model


def _files_of(path: Path) -> tuple[tuple[str, int, int], ...]:
    """The config and weight files' names, sizes and modification times: a folder written again loads again."""
    found = {file for pattern in WEIGHT_PATTERNS for file in path.glob(pattern) if file.is_file()}
    return tuple(sorted((file.name, file.stat().st_size, file.stat().st_mtime_ns) for file in found))
