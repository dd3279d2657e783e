"""Several input sets from a model file's build(): flattened like the first, and the dims that
vary between them proposed as dynamic axes."""
from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from .inputs import (
    InputStructure,
    UnsupportedInputError,
    flat_model,
    is_plain,
    leaf_name,
    positional_names,
    split_inputs,
    structure_of,
)

SAME_INPUTS_HINT = ("Give every input set the same inputs, nested the same way, with the same dtypes and "
                    "constants: only sizes may differ. An input that is None in one set and a tensor in another "
                    "cannot be one ONNX input: give a tensor in every set (an empty one where there is nothing, "
                    "such as a past of length 0).")


def several_input_sets(given: list[Any]) -> list[list[Any]] | None:
    """What follows the model in build()'s result as a list of sets in ``split_inputs``' form, when it
    is ``[set1, set2, ...]``; None for one set (a list of tensors is one args set, as it always was)."""
    if len(given) != 1 or not isinstance(given[0], list):
        return None
    if given[0] and not all(isinstance(one, (tuple, dict)) for one in given[0]):
        return None
    if not given[0]:
        raise UnsupportedInputError("build() returned an empty list of input sets.",
                                    "Return (model, [set1, set2, ...]) with at least one set.")
    return [_set_parts(one) for one in given[0]]


def _set_parts(one: Any) -> list[Any]:
    """One set as ``split_inputs`` takes it: an ``(args, kwargs)`` pair is two parts."""
    if isinstance(one, tuple) and len(one) == 2 and isinstance(one[0], (tuple, list)) and isinstance(one[1], dict):
        return [one[0], one[1]]
    return [one]


def flat_input_sets(model: torch.nn.Module, sets: list[list[Any]], file_name: str
                    ) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], InputStructure | None,
                               list[tuple[torch.Tensor, ...]]]:
    """The module to export, the first set's tensors, their structure, and each other set's tensors
    in the same order; an UnsupportedInputError naming the set and the input that differs."""
    args, kwargs = split_inputs(sets[0])
    module, inputs, structure = flat_model(model, args, kwargs, file_name)
    first = _named_leaves(model, args, kwargs, file_name)
    others = []
    for number, parts in enumerate(sets[1:], 2):
        other = _named_leaves(model, *split_inputs(parts), file_name)
        _refuse_differences(first, other, number)
        others.append(tuple(value for value in other.values() if isinstance(value, torch.Tensor)))
    return module, inputs, structure, others


def _named_leaves(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], file_name: str
                  ) -> dict[str, Any]:
    """Every leaf of one set (tensors and constants) by the name Fixport gives it, in flat order."""
    if is_plain(args, kwargs):
        return dict(zip(positional_names(model, len(args)), args))
    structure = structure_of(model, args, kwargs, file_name)
    flat, _ = pytree.tree_flatten_with_path((args, kwargs))
    parameters = positional_names(model, len(args))
    tensor_names = dict(zip(structure.tensor_positions, structure.names))
    return {tensor_names.get(position) or leaf_name(path, parameters): leaf
            for position, (path, leaf) in enumerate(flat)}


def _refuse_differences(first: dict[str, Any], other: dict[str, Any], number: int) -> None:
    """An UnsupportedInputError for the first input where set ``number`` differs from set 1 in more than size."""
    def refuse(difference: str) -> None:
        raise UnsupportedInputError(f"Input set {number} differs from set 1 in more than sizes: {difference}.",
                                    SAME_INPUTS_HINT)

    for name in first:
        if name not in other:
            refuse(f"set 1 gives {name}, set {number} does not (None or left out)")
    for name in other:
        if name not in first:
            refuse(f"set {number} gives {name}, set 1 does not (None or left out)")
    if list(first) != list(other):
        refuse(f"its inputs come in another order ({', '.join(other)} instead of {', '.join(first)})")
    for name, mine in first.items():
        theirs = other[name]
        if isinstance(mine, torch.Tensor) != isinstance(theirs, torch.Tensor):
            refuse(f"{name} is a {type(mine).__name__} in set 1 and a {type(theirs).__name__} in set {number}")
        if not isinstance(mine, torch.Tensor):
            if mine != theirs:
                refuse(f"{name} is {mine!r} in set 1 and {theirs!r} in set {number}")
        elif mine.dtype != theirs.dtype:
            refuse(f"{name} is {_dtype(mine)} in set 1 and {_dtype(theirs)} in set {number}")
        elif mine.dim() != theirs.dim():
            refuse(f"{name} has {mine.dim()} dims in set 1 ({_shape(mine)}) and {theirs.dim()} in set {number} "
                   f"({_shape(theirs)})")


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _shape(tensor: torch.Tensor) -> str:
    return "x".join(str(d) for d in tensor.shape) or "scalar"


def dims_inferred_from_sets(dynamic_axes: dict[str, Any] | None, proposed: dict[str, dict[int, str]] | None) -> bool:
    """Whether the export's dynamic dims are exactly those inferred from build()'s input sets
    (then the sets are the other sizes it is checked at: see ``SETS_ONLY_NOTE``)."""
    if not proposed:
        return False
    declared = {str(name): {int(axis): str(dim) for axis, dim in dims.items()}
                for name, dims in (dynamic_axes or {}).items() if dims}
    return declared == proposed


class _InputRecorder(torch.nn.Module):
    """What InputObserver watches: the flat tensors of each set, without running the model."""

    def forward(self, *tensors: torch.Tensor) -> None:
        return None


def proposed_dynamic_axes(names: list[str], sets: list[tuple[torch.Tensor, ...]]) -> dict[str, dict[int, str]]:
    """Input name -> {axis: dim name} for every dim whose size differs between ``sets`` (torch's
    InputObserver says which). A dim is named after the first input and axis it is found at
    (``input_ids_dim1``); dims with the same size in every set share that name."""
    observer = torch.onnx.InputObserver()
    recorder = _InputRecorder()
    with observer(recorder, store_n_calls=len(sets)):
        for inputs in sets:  # shapes are all it reads: meta tensors, not its copies of real ones
            recorder(*(torch.empty_like(tensor, device="meta") for tensor in inputs))
    inferred = observer.infer_dynamic_shapes()
    per_tensor = inferred["tensors"] if isinstance(inferred, dict) else inferred
    by_sizes: dict[tuple[int, ...], str] = {}
    axes: dict[str, dict[int, str]] = {}
    for position, (name, dims) in enumerate(zip(names, per_tensor)):
        for axis in sorted(dims or {}):
            sizes = tuple(int(inputs[position].shape[axis]) for inputs in sets)
            dim_name = by_sizes.setdefault(sizes, f"{name.replace('.', '_')}_dim{axis}")
            axes.setdefault(name, {})[axis] = dim_name
    return axes
