"""Capture failures answered with a code change, tried on the loaded model before it is proposed.

For each capture failure at a line of the model file, :func:`fixport.core.model.capture_changes.propose_change`
reads the statement there. The changes are then tried together without reloading the weights:
the changed file is run as a module, and its version of each changed method is bound to the
loaded model's instances of that class. The change holds when torch gives the same outputs as
before and torch.export captures the model; each problem then carries its diff and says so.
"""
from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import torch

from fixport.core.exporters.torch_export.same_outputs import same_outputs
from fixport.core.loaders.loading import LoadedModel
from fixport.core.model.capture_changes import ChangedSource, CodeChange, proposals_for
from fixport.core.model.problems import UnsupportedNode

CHANGE_HOLDS = ("Tried on the loaded model: with the change below torch.export captures it, and torch's outputs "
                "stay the same")
CHANGE_UNTRIED = "The change below may answer it"


def _changed_module(loaded: LoadedModel, changed: ChangedSource) -> types.ModuleType:
    """The changed model file run as a module of its own (its folder importable, as when loaded)."""
    module = types.ModuleType("fixport_changed_model")
    module.__file__ = str(loaded.path)
    sys.path.insert(0, str(loaded.path.parent))
    try:
        exec(compile(changed.after, str(loaded.path), "exec"), module.__dict__)
    finally:
        sys.path.remove(str(loaded.path.parent))
    return module


@contextmanager
def _methods_replaced(model: torch.nn.Module, module: types.ModuleType, changes: list[CodeChange]) -> Iterator[None]:
    """The loaded model's instances of each changed class run the changed method (weights untouched)."""
    patched: list[tuple[torch.nn.Module, str]] = []
    try:
        for change in changes:
            function = getattr(getattr(module, change.class_name, None), change.method_name, None)
            if function is None:
                raise LookupError(f"{change.class_name}.{change.method_name} is not in the changed file")
            for instance in model.modules():
                if type(instance).__name__ == change.class_name:
                    setattr(instance, change.method_name, types.MethodType(function, instance))
                    patched.append((instance, change.method_name))
        yield
    finally:
        for instance, name in patched:
            instance.__dict__.pop(name, None)


def _try(loaded: LoadedModel, changed: ChangedSource, recaptured: Callable[[], str]) -> str:
    """'' when the changes hold (same torch outputs, and the capture succeeds), else why not."""
    if any(not change.class_name for change in changed.changes):
        return "not tried: the line is not in a method of a class"
    try:
        module = _changed_module(loaded, changed)
        with torch.no_grad():
            expected = loaded.module(*loaded.example_inputs)
        with _methods_replaced(loaded.module, module, changed.changes):
            with torch.no_grad():
                got = loaded.module(*loaded.example_inputs)
            if not same_outputs(expected, got):
                return "torch's outputs change with it, so it is not the same model"
            return recaptured()
    except Exception as error:  # noqa: BLE001 -- the user's changed code can raise anything
        return f"it raises {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


def with_code_changes(loaded: LoadedModel, problems: list[UnsupportedNode],
                      recaptured: Callable[[], str]) -> list[UnsupportedNode]:
    """``problems`` with a proposed change (``code_change``, a diff) on each capture failure that has
    one; ``recaptured()`` captures the model again and says what still fails ('' when nothing)."""
    if loaded.source_kind != "python" or loaded.module is None or not loaded.path.is_file():
        return problems
    before = loaded.path.read_text(encoding="utf-8")
    proposals = proposals_for(before, loaded.path.name, problems)
    if not proposals:
        return problems
    outcome = _try(loaded, ChangedSource(loaded.path.name, before, list(proposals.values())), recaptured)
    updated = list(problems)
    for index, change in proposals.items():
        problem = problems[index]
        together = f" (with the {len(proposals)} changes proposed here)" if len(proposals) > 1 else ""
        verdict = f"{CHANGE_HOLDS}{together}." if not outcome else f"{CHANGE_UNTRIED} ({outcome})."
        what = problem.message.partition("`. ")[0] + "`."  # what torch could not decide, at which line
        updated[index] = replace(problem, message=f"{what} {change.why} {verdict}",
                                 code_change=ChangedSource(loaded.path.name, before, [change]).diff())
    return updated
