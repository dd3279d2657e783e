"""torch.export's ``dynamic_shapes``, nested like the inputs, as the per-input ``dynamic_axes``
Fixport checks and exports with (torch-free: the command line converts ``--dynamic-shapes`` too).

``{"input_ids": {0: "batch", 1: "seq"}, "past": [{0: "batch", 2: "past"}, ...]}`` becomes
``{"input_ids": {0: "batch", 1: "seq"}, "past.0": {0: "batch", 2: "past"}, ...}``: the input names
Fixport gives the tensors of a nested call (``core/foundation/inputs.py``). A dim is a name
(equal names are equal dims), ``None`` (static), or one of torch's ``Dim`` objects: a named
``Dim("batch", min=1)`` keeps its name, and ``Dim.AUTO`` / ``Dim.DYNAMIC`` are named after the
input and axis.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fixport.core.words.errors import ExportError


def dynamic_axes_from_shapes(shapes: Any) -> dict[str, dict[int, str]]:
    """``dynamic_shapes`` keyed by input (parameter) name, flattened to ``dynamic_axes`` by input name."""
    if not isinstance(shapes, Mapping):
        raise _bad_shapes("dynamic_shapes must map each input's name to its dims, e.g. "
                          '{"input_ids": {"0": "batch", "1": "seq"}}', shapes)
    axes: dict[str, dict[int, str]] = {}
    for name, value in shapes.items():
        _flatten(str(name), value, axes)
    return axes


def _flatten(name: str, value: Any, axes: dict[str, dict[int, str]]) -> None:
    if value is None:
        return
    if isinstance(value, Mapping) and value and all(_is_axis(key) for key in value):
        dims = {int(key): _dim_name(name, int(key), dim) for key, dim in value.items() if not _static(dim)}
        if dims:
            axes[name] = dims
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            _flatten(f"{name}.{key}", child, axes)
        return
    if isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            _flatten(f"{name}.{index}", child, axes)
        return
    raise _bad_shapes(f"the dims of {name!r} must be a mapping such as {{\"0\": \"batch\"}}, a list of such "
                      f"mappings for a list of tensors, or null", value)


def _static(dim: Any) -> bool:
    """None or a size: the dim stays as it is (Dim.STATIC too)."""
    return dim is None or (isinstance(dim, int) and not isinstance(dim, bool)) or "STATIC" in repr(dim)


def _is_axis(key: Any) -> bool:
    return (isinstance(key, int) and not isinstance(key, bool)) or (isinstance(key, str) and key.strip().isdigit())


def _dim_name(name: str, axis: int, dim: Any) -> str:
    if isinstance(dim, str) and dim.strip():
        return dim.strip()
    given = getattr(dim, "__name__", None)  # torch.export.Dim("batch", ...)
    if isinstance(given, str) and given and not given.startswith("_"):
        return given
    if type(dim).__name__ in ("_DimHint", "DimHint", "_Dim") or hasattr(dim, "type"):  # Dim.AUTO, Dim.DYNAMIC
        return f"{name}_dim{axis}"
    raise _bad_shapes(f"axis {axis} of {name!r} needs a dim name such as \"batch\" (or torch's Dim), "
                      f"not {dim!r}", dim)


def _bad_shapes(problem: str, value: Any) -> ExportError:
    return ExportError(f"The dynamic shapes are not valid: {problem} (got {value!r}).",
                       'Write them like the inputs, e.g. {"input_ids": {"0": "batch", "1": "seq"}, '
                       '"past": [{"0": "batch", "2": "past"}]}; equal names mean equal dims.')


def parse_dims(name: str, text: str, rank: int | None = None) -> dict[int, str]:
    """One input's dynamic dims as typed in the window, ``0: batch, 1: seq`` (``=`` works too);
    raises :class:`ExportError` naming the input and the bad part."""
    dims: dict[int, str] = {}
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        axis, separator, dim = part.replace("=", ":").partition(":")
        axis, dim = axis.strip(), dim.strip()
        if not separator or not axis.lstrip("-").isdigit() or not dim.isidentifier():
            raise ExportError(f"The dynamic dims of {name} cannot be read at {part.strip()!r}.",
                              "Write AXIS: NAME pairs separated by commas, e.g. 0: batch, 1: seq.")
        index = int(axis)
        if rank is not None and not -rank <= index < rank:
            raise ExportError(f"{name} has {rank} dims, so it has no axis {index}.",
                              f"Use an axis from 0 to {rank - 1}.")
        dims[index % rank if rank else index] = dim
    return dims


def dims_text(dims: Mapping[int, str]) -> str:
    """The dims as :func:`parse_dims` reads them back: ``0: batch, 1: seq``."""
    return ", ".join(f"{axis}: {dim}" for axis, dim in sorted(dims.items()))


def shapes_argument(axes: Mapping[str, Mapping[int, str]]) -> str:
    """The ``--dynamic-shapes`` JSON that declares these dims (input names as Fixport gives them)."""
    return json.dumps(shapes_from_dynamic_axes({name: dict(sorted(dims.items())) for name, dims in axes.items()}))


def shapes_from_dynamic_axes(axes: Mapping[str, Mapping[int, str]]) -> dict[str, Any]:
    """``dynamic_axes`` by input name nested back into ``dynamic_shapes`` as ``--dynamic-shapes``
    takes it (JSON: string axes): ``past.0``, ``past.1`` become a list under ``past``. Flat names
    stay where nesting would not read back as the same axes."""
    flat = {name: {str(axis): dim for axis, dim in dims.items()} for name, dims in axes.items() if dims}
    tree: dict[str, Any] = {}
    for name, dims in flat.items():
        *parents, leaf = name.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if isinstance(node, _Axes):
                return flat
        node[leaf] = _Axes(dims)
    nested = _as_lists(tree)
    try:
        same = dynamic_axes_from_shapes(nested) == {name: {int(a): d for a, d in dims.items()}
                                                    for name, dims in flat.items()}
    except ExportError:
        same = False
    return nested if same else flat


class _Axes(dict):
    """One input's axes while nesting (a dict of dims, not a level of the structure)."""


def _as_lists(node: Any) -> Any:
    """Levels keyed 0..n-1 as lists (unlisted places null), axes as plain dicts."""
    if isinstance(node, _Axes):
        return dict(node)
    children = {key: _as_lists(child) for key, child in node.items()}
    if children and all(key.isdigit() for key in children):
        return [children.get(str(index)) for index in range(max(int(key) for key in children) + 1)]
    return children
