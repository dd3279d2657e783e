"""What the dims that vary between build()'s input sets mean for an export, in words (no torch):
the proposal is the export's dynamic dims where none are declared; where some are, the dims that
vary but are not declared are named. The loader infers them (``core/loaders/input_sets.py``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fixport.core.project.dynamic_shapes import shapes_from_dynamic_axes

DimsByInput = Mapping[str, Mapping[int, str]]


def proposed_shapes(proposed: DimsByInput | None) -> dict[str, Any] | None:
    """The proposal as the ``--dynamic-shapes`` JSON a user pastes (None: one input set given)."""
    return None if proposed is None else shapes_from_dynamic_axes(proposed)


def proposal_notes(proposed: DimsByInput | None, declared: DimsByInput | None, set_count: int,
                   used: bool) -> list[str]:
    """A note on how the export's dynamic dims (``declared``; ``used``: the proposal, as none were
    declared) stand to those that vary between the ``set_count`` sets."""
    if proposed is None:
        return []
    sets = f"the {set_count} input sets of build()"
    if not proposed:
        return [f"No dim varies between {sets} (the same shapes in each): none is proposed dynamic."]
    if used:
        return [f"No dynamic dims are declared, so the dims that vary between {sets} are (inferred by torch's "
                f"InputObserver): {_listed(proposed)}."]
    missing = {name: {axis: dim for axis, dim in dims.items() if axis not in (declared or {}).get(name, {})}
               for name, dims in proposed.items()}
    missing = {name: dims for name, dims in missing.items() if dims}
    if not missing:
        return [f"Every dim that varies between {sets} is declared dynamic."]
    return [f"{_listed(missing)} {'vary' if _count(missing) > 1 else 'varies'} between {sets} but "
            f"{'are' if _count(missing) > 1 else 'is'} not declared dynamic: the export keeps the first set's "
            "size there, so the other sets fail. Declare them (the dynamic shapes inferred from the sets are "
            "shown below)."]


def _count(dims: DimsByInput) -> int:
    return sum(len(axes) for axes in dims.values())


def _listed(dims: DimsByInput) -> str:
    """'input_ids_dim0 (input_ids[0], past.0[0]), past_0_dim2 (past.0[2])': each dim and where it is."""
    places: dict[str, list[str]] = {}
    for name, axes in dims.items():
        for axis, dim in axes.items():
            places.setdefault(dim, []).append(f"{name}[{axis}]")
    return ", ".join(f"{dim} ({', '.join(where)})" for dim, where in places.items())
