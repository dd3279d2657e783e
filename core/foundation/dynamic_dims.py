"""The dims an export declares dynamic, by input position and axis (shapes only: no torch)."""
from __future__ import annotations


def declared_dims(dynamic_axes: dict | None, input_names: list[str], input_shapes: list[tuple[int, ...]]
                  ) -> dict[str, list[tuple[int, int]]]:
    """Dim name -> the (input position, axis) it names, for every dynamic axis declared on an input
    (by shapes, no torch)."""
    dims: dict[str, list[tuple[int, int]]] = {}
    for input_name, axes in (dynamic_axes or {}).items():
        if input_name not in input_names:
            continue  # an output's dynamic axes: nothing to feed
        position = list(input_names).index(input_name)
        if position >= len(input_shapes):
            continue
        named = axes.items() if isinstance(axes, dict) else ((axis, f"{input_name}_dim{axis}") for axis in axes)
        for axis, dim_name in named:
            axis = int(axis) % max(len(input_shapes[position]), 1)
            dims.setdefault(str(dim_name), []).append((position, axis))
    return dims
