"""Where torch.export pinned a declared size: the guards a capture added at a line of the code.

A line that needs a size to be one value (``if num_patches == num_positions and height == width:``,
a shortcut for the traced size) makes torch.export refuse the declared dims; torch.onnx then
captures again with the dims its suggested fixes give, static, and the ONNX file holds for the
traced size only, which the other-size check finds (``shape_specialised``). Where a declared dim
came out static, the model is captured once more with ``Dim.AUTO``, which specialises instead of
refusing and keeps each guard with the line that made it; those at a line outside torch are said
as warnings (``SIZE_GUARD_PREFIX``), as the TorchScript trace's TracerWarnings name their lines, so
:mod:`fixport.core.exporters.size_shortcuts` can propose the change there. Where every declared dim
came out dynamic (dims of one name, as a KV cache's batch, sharing one symbol), that capture waits
until the other-size check fails (:class:`GuardsOnDemand`): at real size it costs a second capture.

A guard can also keep the dim dynamic yet hold only at some sizes: a branch on a size taken as at
the traced one (``if length < out.shape[-1]: out = out[..., :length]`` with ``out`` 8-aligned holds
where the length is a multiple of 8). Its sizes are no range, so the program's refusal is no
assumption of the model's code; such a guard is said at its line too (torch.onnx's capture keeps it
as a runtime assertion, which has no line: the model is captured once more with guards for it).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree
from torch.utils._sympy.numbers import int_oo

from fixport.core.exporters.dynamo.rnn_dispatch import rnn_dispatch_afresh
from fixport.core.exporters.size_shortcuts import SIZE_GUARD_PREFIX

_PLACE = re.compile(r"([\w./\\-]+\.py):(\d+) in \w+")
_NEAR = 16  # the sizes on either side of the traced one a guard is tried at
_TORCH_DIRS = ("_subclasses/", "_prims_common/", "_refs/", "_decomp/", "fx/", "_dynamo/", "export/", "_export/",
               "nn/", "onnx/", "_higher_order_ops/", "utils/", "_library/", "_ops.py", "functional.py")


def _shape_env(program: torch.export.ExportedProgram):
    for node in program.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        fake_mode = getattr(value, "fake_mode", None)
        if fake_mode is not None and fake_mode.shape_env is not None:
            return fake_mode.shape_env
    return None


def _declared(dynamic_shapes: Any) -> list[Any]:
    """The dims ``dynamic_shapes`` declares dynamic."""
    return [leaf for leaf in _pytree.tree_leaves(dynamic_shapes) if leaf is not None]


def axis_labels(dynamic_axes: dict[str, Any] | None) -> int | None:
    """How many different dims ``--dynamic-axes`` declares: its labels (the batch of every cache tensor
    is one dim; an axis given without a label, in the list form, is a dim of its own); None for none."""
    if not dynamic_axes:
        return None
    labels: set[Any] = set()
    for name, axes in dynamic_axes.items():
        labels |= set(axes.values()) if isinstance(axes, dict) else {(name, axis) for axis in axes}
    return len(labels)


def _has_end(bound: Any, declared_maxima: set[int]) -> bool:
    """Whether a range's upper bound is an end the capture found: torch's ``int_oo`` is no end (sympy
    calls it finite, being an integer), nor is a maximum the declaration gave."""
    return bound is not int_oo and bool(bound.is_finite) and int(bound) not in declared_maxima


def _looks_pinned(program: torch.export.ExportedProgram, declared: list[Any], labels: int | None = None) -> bool:
    """Whether torch.export's refined capture pinned a declared dim: fewer symbolic dims among the user
    inputs than declared, fewer symbols than differently named dims (a guard equated two of them:
    ``labels``, where the axes were named), or a range with an end the declaration did not give."""
    users = set(program.graph_signature.user_inputs)
    symbols = [size.node.expr for node in program.graph.nodes if node.op == "placeholder" and node.name in users
               for size in getattr(node.meta.get("val"), "shape", ()) if isinstance(size, torch.SymInt)]
    distinct = labels if labels is not None else len(declared)
    if len(symbols) < len(declared) or len(set(symbols)) < min(distinct, len(symbols)):
        return True
    maxima = {leaf.max for leaf in declared if isinstance(getattr(leaf, "max", None), int)}
    ranges = [program.range_constraints.get(symbol) for symbol in set(symbols)]
    return any(r is not None and _has_end(r.upper, maxima) for r in ranges)


def pinned_declared_dims(program: torch.export.ExportedProgram, module: torch.nn.Module, args: tuple,
                         kwargs: dict, dynamic_shapes: Any, labels: int | None = None) -> list[str]:
    """Where a declared dim of ``program`` came out static: the guards that pinned it (see
    :func:`guard_warnings`), from a capture with every declared dim ``Dim.AUTO``; else where a guard
    holds at sizes with gaps between them (:func:`gapped_guard_warnings`); [] otherwise. ``labels``:
    how many differently named dims the dynamic axes declare (see :func:`axis_labels`)."""
    if dynamic_shapes is None:
        return []
    pinned = recaptured_guards(module, args, kwargs, dynamic_shapes) \
        if _looks_pinned(program, _declared(dynamic_shapes), labels) else []
    if pinned or not has_gapped_guard(program):
        return pinned
    again = _captured_with_guards(module, args, kwargs, dynamic_shapes)
    return gapped_guard_warnings(again) if again is not None else []


def recaptured_guards(module: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any) -> list[str]:
    """The guards at lines of the model's code (:func:`guard_warnings`) of a capture with every declared
    dim ``Dim.AUTO``, which specialises where torch.export refines, keeping each guard with its line."""
    auto = _pytree.tree_map(lambda leaf: None if leaf is None else torch.export.Dim.AUTO, dynamic_shapes)
    try:
        # size-oblivious, as torch.onnx captures
        with torch.fx.experimental._config.patch(backed_size_oblivious=True), rnn_dispatch_afresh():
            again = torch.export.export(module, args, kwargs=kwargs, dynamic_shapes=auto, strict=False)
    except Exception:  # noqa: BLE001 -- the capture that specialises may fail elsewhere: nothing to say then
        return []
    return guard_warnings(again)


class GuardsOnDemand:
    """:func:`recaptured_guards` for a program that does not look pinned, taken only when asked (the
    other-size check failed) and once: a second capture costs as much as the first at real size.
    ``find`` runs it with the export's fixes and settings in force."""

    def __init__(self, find: Callable[[], list[str]]) -> None:
        self._find = find
        self.found: list[str] | None = None

    def __call__(self) -> list[str]:
        if self.found is None:
            self.found = self._find()
        return self.found


def _holds(expression: Any, symbol: Any, size: int) -> bool:
    try:
        return bool(expression.subs(symbol, size))
    except TypeError:  # an expression sympy cannot decide at that size
        return True


def _gapped(expression: Any, hints: Any) -> bool:
    """Whether ``expression`` on one size fails at a size between two it holds at, near the traced one."""
    symbols = expression.free_symbols
    hint = hints.get(next(iter(symbols))) if len(symbols) == 1 else None
    if hint is None:
        return False
    symbol = next(iter(symbols))
    holds = [_holds(expression, symbol, size) for size in range(max(int(hint) - _NEAR, 2), int(hint) + _NEAR + 1)]
    inside = [i for i, held in enumerate(holds) if held]
    return bool(inside) and not all(holds[inside[0]:inside[-1] + 1])


def _hints(shape_env: Any) -> Any:
    return shape_env.backed_var_to_val if hasattr(shape_env, "backed_var_to_val") else shape_env.var_to_val


def has_gapped_guard(program: torch.export.ExportedProgram) -> bool:
    """Whether a guard or runtime assertion of ``program`` holds at sizes with a gap between them (see
    :func:`gapped_guard_warnings`), wherever it was made (a runtime assertion keeps no line)."""
    shape_env = _shape_env(program)
    if shape_env is None:
        return False
    expressions = [guard.expr for guard in getattr(shape_env, "guards", [])]
    expressions += [a.expr for asserts in getattr(shape_env, "deferred_runtime_asserts", {}).values() for a in asserts]
    return any(_gapped(expression, _hints(shape_env)) for expression in expressions)


def gapped_guard_warnings(program: torch.export.ExportedProgram) -> list[str]:
    """'SizeGuard at file.py:12: ...' for each guard on one size, at a line of the model's or a
    library's code, that fails at a size between two it holds at, near the traced one (``L >= 8*ceil(L/8)``:
    a branch on a size taken as at the traced length): no range of sizes says where the export holds."""
    shape_env = _shape_env(program)
    if shape_env is None:
        return []
    said: dict[str, str] = {}
    for guard in getattr(shape_env, "guards", []):
        match = _PLACE.search(str(guard.sloc))
        if match is None or match[1].startswith(_TORCH_DIRS) or "/torch/" in match[1] or "fixport/" in match[1]:
            continue
        if _gapped(guard.expr, _hints(shape_env)):
            said.setdefault(f"{Path(match[1]).name}:{match[2]}", str(guard.expr))
    return [f"{SIZE_GUARD_PREFIX}{line}: {expression}" for line, expression in said.items()]


def _captured_with_guards(module: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any
                          ) -> torch.export.ExportedProgram | None:
    """The model captured as torch.onnx captures it, its guards kept as guards, with their lines (torch.onnx
    makes them runtime assertions, which keep none); None where that capture fails."""
    from torch.onnx._internal.exporter import _capture_strategies as strategies

    flags, name = getattr(strategies, "_flags", None), "PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS"
    before = getattr(flags, name, None)
    if before is not None:
        setattr(flags, name, False)
    try:
        with rnn_dispatch_afresh():
            return strategies.TorchExportNonStrictStrategy(verbose=False)(module, args, kwargs,
                                                                          dynamic_shapes=dynamic_shapes).exported_program
    except Exception:  # noqa: BLE001 -- nothing to say then
        return None
    finally:
        if before is not None:
            setattr(flags, name, before)


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
