"""Fixes for autograd.Functions through the static-``symbolic`` route.

Registering any ``prim::PythonOp`` symbolic makes torch stop inlining every autograd.Function
that has no symbolic. A ``symbolic`` staticmethod on the mapped Function class does not: torch
calls it for that Function only and still inlines the others. So fixes that name a Function
are attached to its class for the duration of one export (and removed afterwards).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fixport.core.exporters.torchscript import conversion_hooks
from fixport.core.exporters.torchscript.script_part import autograd_functions_named, function_keywords

_MISSING = object()


def _static_symbolic(name: str, fn: Callable, cls: type) -> Callable:
    keywords = function_keywords(fn, name, cls)

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
