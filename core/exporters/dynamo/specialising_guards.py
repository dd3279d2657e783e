"""Where torch.export pinned a declared size: the guards a capture added at a line of the code.

A line that needs a size to be one value (``if num_patches == num_positions and height == width:``,
a shortcut for the traced size) makes torch.export refuse the declared dims; torch.onnx then
captures again with the dims its suggested fixes give, static, and the ONNX file holds for the
traced size only, which the other-size check finds (``shape_specialised``). Where a declared dim
came out static, the model is captured once more with ``Dim.AUTO``, which specialises instead of
refusing and keeps each guard with the line that made it; those at a line outside torch are said
as warnings (``SIZE_GUARD_PREFIX``), as the TorchScript trace's TracerWarnings name their lines, so
:mod:`fixport.core.exporters.size_shortcuts` can propose the change there.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree

from fixport.core.exporters.size_shortcuts import SIZE_GUARD_PREFIX

_PLACE = re.compile(r"([\w./\\-]+\.py):(\d+) in \w+")
_TORCH_DIRS = ("_subclasses/", "_prims_common/", "_refs/", "_decomp/", "fx/", "_dynamo/", "export/", "_export/",
               "nn/", "onnx/", "_higher_order_ops/", "utils/", "_library/", "_ops.py", "functional.py")


def _shape_env(program: torch.export.ExportedProgram):
    for node in program.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        fake_mode = getattr(value, "fake_mode", None)
        if fake_mode is not None and fake_mode.shape_env is not None:
            return fake_mode.shape_env
    return None


def _declared(dynamic_shapes: Any) -> int:
    """How many dims ``dynamic_shapes`` declares dynamic."""
    return sum(leaf is not None for leaf in _pytree.tree_leaves(dynamic_shapes))


def _looks_pinned(program: torch.export.ExportedProgram, declared: int) -> bool:
    """Whether torch.export's refined capture pinned a declared dim: fewer symbolic dims among the user
    inputs than declared, one symbol for two dims (a guard equated them), or a range with an upper end."""
    users = set(program.graph_signature.user_inputs)
    symbols = [size.node.expr for node in program.graph.nodes if node.op == "placeholder" and node.name in users
               for size in getattr(node.meta.get("val"), "shape", ()) if isinstance(size, torch.SymInt)]
    if len(symbols) < declared or len(set(symbols)) < len(symbols):
        return True
    ranges = [program.range_constraints.get(symbol) for symbol in set(symbols)]
    return any(r is not None and r.upper.is_finite for r in ranges)


def pinned_declared_dims(program: torch.export.ExportedProgram, module: torch.nn.Module, args: tuple,
                         kwargs: dict, dynamic_shapes: Any) -> list[str]:
    """Where a declared dim of ``program`` came out static: the guards that pinned it (see
    :func:`guard_warnings`), from a capture with every declared dim ``Dim.AUTO``; [] otherwise."""
    if dynamic_shapes is None or not _looks_pinned(program, _declared(dynamic_shapes)):
        return []
    auto = _pytree.tree_map(lambda leaf: None if leaf is None else torch.export.Dim.AUTO, dynamic_shapes)
    try:
        with torch.fx.experimental._config.patch(backed_size_oblivious=True):  # as torch.onnx captures
            again = torch.export.export(module, args, kwargs=kwargs, dynamic_shapes=auto, strict=False)
    except Exception:  # noqa: BLE001 -- the capture that specialises may fail elsewhere: nothing to say then
        return []
    return guard_warnings(again)


def guard_warnings(program: torch.export.ExportedProgram) -> list[str]:
    """'SizeGuard at file.py:12: Eq(...)' for each guard pinning a size symbol (an equality) that the
    capture added at a line of the model's or a library's code (not torch's own), once per line."""
    shape_env = _shape_env(program)
    if shape_env is None:
        return []
    said: dict[str, str] = {}
    for guard in getattr(shape_env, "guards", []):
        expression = str(guard.expr)
        if not expression.startswith("Eq(") or not guard.expr.free_symbols:
            continue
        match = _PLACE.search(str(guard.sloc))
        if match is None or match[1].startswith(_TORCH_DIRS) or "/torch/" in match[1]:
            continue
        said.setdefault(f"{Path(match[1]).name}:{match[2]}", expression)
    return [f"{SIZE_GUARD_PREFIX}{line}: {expression}" for line, expression in said.items()]
