"""Snapshot and restore of the TorchScript exporter's process-global symbolic registry."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch.onnx._internal.torchscript_exporter import registration
from torch.onnx._internal.torchscript_exporter import utils as exporter_utils


def load_all_builtin_symbolics() -> None:
    """Import every symbolic_opsetN module: the registry fills lazily otherwise."""
    exporter_utils._trigger_symbolic_function_registration()


@dataclass(frozen=True)
class RegistrySnapshot:
    overrides: dict[str, dict[int, Callable[..., Any]]]
    merged: dict[str, dict[int, Callable[..., Any]]]


def snapshot_registry() -> RegistrySnapshot:
    load_all_builtin_symbolics()
    groups = registration.registry._registry
    return RegistrySnapshot(
        overrides={name: dict(group._functions._overrides) for name, group in groups.items()},
        merged={name: dict(group._functions._merged) for name, group in groups.items()},
    )


def restore_registry(snapshot: RegistrySnapshot) -> None:
    """Drop every custom symbolic registered since ``snapshot`` was taken."""
    groups = registration.registry._registry
    for name in list(groups):
        if name not in snapshot.merged:
            del groups[name]
            continue
        functions = groups[name]._functions
        functions._overrides = dict(snapshot.overrides[name])
        functions._merged = dict(snapshot.merged[name])


def builtin_opsets(kind: str) -> list[int]:
    """Opsets at which torch itself registers a symbolic for ``kind`` (no custom ones)."""
    load_all_builtin_symbolics()
    group = registration.registry.get_function_group(kind)
    return sorted(group._functions._base) if group is not None else []


def first_supported_opset(kind: str) -> int | None:
    opsets = builtin_opsets(kind)
    return opsets[0] if opsets else None


class SymbolicRegistryState:
    """The TorchScript exporter's registry as the worker's :class:`~fixport.core.exporters.base.ProcessState`."""

    def __init__(self) -> None:
        load_all_builtin_symbolics()

    def snapshot(self) -> RegistrySnapshot:
        return snapshot_registry()

    def restore(self, snapshot: object) -> None:
        assert isinstance(snapshot, RegistrySnapshot)
        restore_registry(snapshot)

    def fingerprint(self) -> object:
        groups = registration.registry._registry
        return tuple((name, tuple(sorted((opset, id(f)) for opset, f in group._functions._overrides.items())))
                     for name, group in groups.items() if group._functions._overrides)
