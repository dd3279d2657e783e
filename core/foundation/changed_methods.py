"""Methods of a model's parts changed for one export: set on the instances, taken off after.

A code-change fix (torch.export's capture, or the TorchScript trace) lists each changed method with
where it goes; the model's files and classes stay as they are, as transformers' exporters patch
modules for the export only. Part of the fix script's support: both exporters' parts use it.
"""
from __future__ import annotations

import inspect
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

# One changed method of a capture fix: (class name, the file its class is defined in, method name, the
# changed function). The class may be the model's or a library's (its base classes are searched too).
ChangedMethod = tuple[str, str, str, Callable[..., Any]]


def _defining_class(instance: Any, class_name: str, file_name: str, method: str) -> type | None:
    """The class of ``instance`` (or a base class) named ``class_name`` in ``file_name`` that
    defines ``method``, where ``instance`` runs that definition (a subclass may override it)."""
    for owner in type(instance).__mro__:
        if owner.__name__ != class_name or method not in vars(owner):
            continue
        try:
            defined_in = os.path.basename(inspect.getsourcefile(owner) or "")
        except TypeError:  # a builtin class
            continue
        if defined_in == file_name and getattr(type(instance), method, None) is vars(owner)[method]:
            return owner
    return None


def _bound_like(function: Callable[..., Any], owner: type) -> Callable[..., Any]:
    """``function`` reading the names of the module ``owner`` is defined in, as its method does."""
    module = sys.modules.get(owner.__module__)
    names = dict(vars(module)) if module is not None else {}
    names.setdefault("torch", torch)
    names[owner.__name__] = owner  # super(Class, self) in a changed method names it
    return types.FunctionType(function.__code__, names, function.__name__, function.__defaults__,
                              function.__closure__)


def _modules_defining(file_name: str, function: str) -> list[types.ModuleType]:
    """The loaded modules of the file ``file_name`` whose global ``function`` is defined there."""
    found = []
    for module in list(sys.modules.values()):
        value = getattr(module, "__dict__", {}).get(function)
        code = getattr(inspect.unwrap(value), "__code__", None) if callable(value) else None
        if code is not None and os.path.basename(getattr(module, "__file__", None) or "") == file_name \
                and os.path.basename(code.co_filename) == file_name:
            found.append(module)
    return found


def _in_module(function: Callable[..., Any], module: types.ModuleType) -> Callable[..., Any]:
    """``function`` reading the globals of ``module``, as the function it stands for does."""
    return types.FunctionType(function.__code__, module.__dict__, function.__name__, function.__defaults__,
                              function.__closure__)


@contextmanager
def methods_changed(model: torch.nn.Module, changed: Sequence[ChangedMethod]) -> Iterator[None]:
    """Every submodule of ``model`` runs the changed version of each method in ``changed`` while
    the block runs (set on the instances, taken off after): the model's files and classes stay
    as they are, as transformers' exporters patch modules for the export only. A change that
    reaches no submodule raises LookupError, naming it."""
    patched: list[tuple[Any, str, Any]] = []  # (instance, method, what its __dict__ held before)
    missing = object()
    try:
        for class_name, file_name, method, function in changed:
            if not class_name:  # a plain function: its module's global, read by its callers at each call
                modules = _modules_defining(file_name, method)
                for module in modules:
                    patched.append((module, method, module.__dict__[method]))
                    module.__dict__[method] = _in_module(function, module)
                if not modules:
                    raise LookupError(f"no module of {file_name} defines {method}: the change is for another "
                                      "version of its code")
                continue
            reached = 0
            for instance in model.modules():
                owner = _defining_class(instance, class_name, file_name, method)
                if owner is not None:
                    patched.append((instance, method, instance.__dict__.get(method, missing)))
                    instance.__dict__[method] = types.MethodType(_bound_like(function, owner), instance)
                    reached += 1
            if not reached:
                raise LookupError(f"no part of the model runs {class_name}.{method} of {file_name}: the change "
                                  "is for another model or another version of its code")
        yield
    finally:
        for instance, method, before in reversed(patched):
            if before is missing:
                instance.__dict__.pop(method, None)
            else:
                instance.__dict__[method] = before
