"""Fixes for autograd.Functions through the static-``symbolic`` route.

Registering any ``prim::PythonOp`` symbolic makes torch stop inlining every autograd.Function
that has no symbolic. A ``symbolic`` staticmethod on the mapped Function class does not: torch
calls it for that Function only and still inlines the others. So fixes that name a Function
are attached to its class for the duration of one export (and removed afterwards).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from fixport.core.exporters.torchscript import conversion_hooks

_MISSING = object()


def autograd_functions_named(name: str) -> list[type]:
    """Every loaded torch.autograd.Function subclass called ``name`` that defines forward."""
    found, pending = [], list(torch.autograd.Function.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__name__ == name and "forward" in vars(cls):
            found.append(cls)
    return found


def _keyword_arguments(fn: Callable, name: str, cls: type) -> dict[str, Any]:
    """The keywords a prim::PythonOp symbolic would get, limited to what ``fn`` accepts."""
    offered = {"name": name, "inplace": 0, "module": cls.__module__}
    parameters = inspect.signature(inspect.unwrap(fn)).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return offered
    accepted = {p.name for p in parameters}
    return {key: value for key, value in offered.items() if key in accepted}


def _static_symbolic(name: str, fn: Callable, cls: type) -> Callable:
    keywords = _keyword_arguments(fn, name, cls)

    def symbolic(g, *args):
        key = conversion_hooks.claim_python_op_key(name)
        if g.original_node is None:  # torch passes no node to static symbolics; fixes may need it
            g.original_node = conversion_hooks.node_for_key(key)
        try:
            result = fn(g, *args, **keywords)
        except Exception as exc:  # in a diagnosing export: record it and go on, as for any node
            result = conversion_hooks.static_symbolic_failed(g, key, name, exc, args)
        conversion_hooks.tag_new_nodes(g.new_nodes, key)
        return result

    symbolic.__name__ = f"fixport_{name}_symbolic"
    return symbolic


@contextmanager
def attached_function_symbolics(by_name: dict[str, Callable]) -> Iterator[list[str]]:
    """Attach each fix as ``symbolic`` of the Function classes of that name; yields the names
    no loaded class has (their fixes cannot apply)."""
    saved: list[tuple[type, Any]] = []
    missing = []
    try:
        for name, fn in by_name.items():
            classes = autograd_functions_named(name)
            if not classes:
                missing.append(name)
            for cls in classes:
                saved.append((cls, vars(cls).get("symbolic", _MISSING)))
                cls.symbolic = staticmethod(_static_symbolic(name, fn, cls))
        yield missing
    finally:
        for cls, previous in reversed(saved):
            if previous is _MISSING:
                delattr(cls, "symbolic")
            else:
                cls.symbolic = previous
