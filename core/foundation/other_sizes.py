"""Inputs at other sizes of the declared dynamic dims: a larger and a smaller size of each (odd
sizes, batch 1 and above 1 among them), random values like the example's."""
from __future__ import annotations

import torch

SHAPE_SEED = 7  # the other shapes' random inputs, the same on every run


def _larger(size: int) -> int:
    return size + max(1, (size + 1) // 2)  # 1 -> 2 (batch above 1), 8 -> 12, 30 -> 45


def _smaller(size: int) -> int:
    if size <= 2:
        return 1  # batch 1
    smaller = size * 3 // 4
    return max(1, smaller - 1 if smaller % 2 == 0 else smaller)  # odd: 8 -> 5, 30 -> 21


def wider_range(tensor: torch.Tensor) -> tuple[int, int]:
    """An integer tensor's range, grown by half its width at the top (0..2 -> 0..4): a count the
    model computes from its values (``int(batch.max()) + 1`` graphs) then changes."""
    low, high = int(tensor.min()), int(tensor.max())
    return low, high + max(1, (high - low + 2) // 2)


def random_like(tensor: torch.Tensor, shape: list[int] | torch.Size, generator: torch.Generator,
                wider: bool = False) -> torch.Tensor:
    """Random values like ``tensor``'s at ``shape``: normal for floating and complex dtypes, ints
    within the tensor's own range (so token ids stay valid), or in :func:`wider_range` where
    ``wider`` (sorted along the last axis where the example is: a batch vector)."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return torch.randn(shape, generator=generator, dtype=tensor.dtype)
    if tensor.dtype == torch.bool:
        return torch.rand(shape, generator=generator) < 0.5
    if tensor.numel() == 0:
        return torch.zeros(shape, dtype=tensor.dtype)
    low, high = wider_range(tensor) if wider else (int(tensor.min()), int(tensor.max()))
    values = torch.randint(low, high + 1, shape, generator=generator, dtype=tensor.dtype)
    ordered = tensor.dim() >= 1 and tensor.shape[-1] > 1 and bool((tensor.diff(dim=-1) >= 0).all())
    return values.sort(dim=-1).values if wider and ordered and values.dim() >= 1 else values


def wider_label(name: str, tensor: torch.Tensor) -> str:
    """'batch values 0..4': what :func:`random_like` drew ``wider`` for the input ``name``."""
    low, high = wider_range(tensor)
    return f"{name} values {low}..{high}"


def other_size_inputs(dims: dict[str, list[tuple[int, int]]], example_inputs: tuple[torch.Tensor, ...],
                      wider: dict[int, str] | None = None) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    """(label, inputs) at a larger and at a smaller size of every dim in ``dims`` (``declared_dims``),
    the other sizes as traced; the integer inputs in ``wider`` (position -> name) drawn from a wider
    range at the larger size (said in its label). Where distinct dims share their traced size, one
    more set moves them apart (:func:`apart_sizes`)."""
    wider = wider or {}
    if not dims:
        return []
    traced = {name: int(example_inputs[places[0][0]].shape[places[0][1]]) for name, places in dims.items()}
    sums = traced_sums(dims, traced)
    sets = []
    for resize in (_larger, _smaller):
        sizes = _related(traced, sums, {name: resize(size) for name, size in traced.items()})
        if sizes == traced:
            continue
        widen = wider if resize is _larger else {}  # more values where there is room for them
        label = ", ".join([*(f"{name}={size}" for name, size in sizes.items()),
                           *(wider_label(name, example_inputs[p]) for p, name in widen.items())])
        sets.append((label, _inputs_at(dims, example_inputs, sizes, widen)))
    apart = apart_sizes(traced, sums)
    if apart:
        sizes, groups = apart
        label = ", ".join(f"{name}={size}" for name, size in sizes.items())
        differ = "; ".join(" and ".join(group) for group in groups)
        sets.append((f"{label} ({differ} apart, equal in the example)", _inputs_at(dims, example_inputs, sizes, {})))
    return sets


def apart_sizes(traced: dict[str, int], sums: dict[str, tuple[str, str]]
                ) -> tuple[dict[str, int], list[list[str]]] | None:
    """Sizes where distinct dims that share their traced size differ (height = width = 47 gives
    height 71, width 47), with those groups of dims; None where no two do. Moving dims together
    tries square images only, and a graph right for square ones alone would pass. The first dim of
    a group grows, the next keeps its size, the third shrinks (then larger again); the other dims
    stay as traced, and dims derived from others ("past_plus_1", sums) follow them."""
    derived = set(sums) | {name for name in traced if _plus_base(name, traced)}
    by_size: dict[int, list[str]] = {}
    for name, size in traced.items():
        if name not in derived:
            by_size.setdefault(size, []).append(name)
    groups = [names for names in by_size.values() if len(names) > 1]
    if not groups:
        return None
    moved = dict(traced)
    for names in groups:
        size = traced[names[0]]
        choices = [_larger(size), size, _smaller(size)]
        while len(set(choices)) < len(names):
            choices.append(_larger(max(choices)))
        distinct = list(dict.fromkeys(choices))
        moved.update(zip(names, distinct))
    return _related(traced, sums, moved), groups


def _plus_base(name: str, traced: dict[str, int]) -> str:
    """The dim "past_plus_1" is one more than ("past"), where it was so as traced; else ""."""
    base, _, offset = name.rpartition("_plus_")
    return base if base in traced and offset.isdigit() and traced[base] + int(offset) == traced[name] else ""


def _related(traced: dict[str, int], sums: dict[str, tuple[str, str]], sizes: dict[str, int]) -> dict[str, int]:
    """``sizes`` with the derived dims recomputed from their bases: "past_plus_1" stays one more than
    "past" (a mask over the past and the new token), a sum stays the sum of its terms."""
    sizes = dict(sizes)
    for name in traced:
        base = _plus_base(name, traced)
        if base:
            sizes[name] = sizes[base] + traced[name] - traced[base]
    for name, (first, second) in sums.items():
        sizes[name] = sizes[first] + sizes[second]
    return sizes


def _inputs_at(dims: dict[str, list[tuple[int, int]]], example_inputs: tuple[torch.Tensor, ...],
               sizes: dict[str, int], widen: dict[int, str]) -> tuple[torch.Tensor, ...]:
    """Random inputs like the example's with every declared dim at its size in ``sizes``."""
    shapes = [list(t.shape) for t in example_inputs]
    for name, places in dims.items():
        for position, axis in places:
            shapes[position][axis] = sizes[name]
    generator = torch.Generator().manual_seed(SHAPE_SEED)
    return tuple(random_like(t, shape, generator, position in widen)
                 for position, (t, shape) in enumerate(zip(example_inputs, shapes)))


def traced_sums(dims: dict[str, list[tuple[int, int]]], traced: dict[str, int]) -> dict[str, tuple[str, str]]:
    """Dims whose traced size is the sum of two others' (a KV-cache mask's "total" = "seq" + "past"),
    each with those two, so the other sizes keep the sum: a mask shorter or longer than the keys is
    an input the model never takes, and torch.export's own program refuses it (a guard on the sum).
    Batch-like dims (at axis 0 of some input) are never terms; the largest dims are linked first, and
    a linked dim is no term of another."""
    batch_like = {name for name, places in dims.items() if any(axis == 0 for _, axis in places)}
    linked: dict[str, tuple[str, str]] = {}
    for name in sorted(traced, key=lambda n: -traced[n]):
        if name in batch_like or "_plus_" in name:
            continue
        terms = [n for n in traced if n not in (name, *batch_like, *linked) and "_plus_" not in n]
        pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i + 1:] if traced[a] + traced[b] == traced[name]]
        if pairs and not any(name in pair for pair in linked.values()):
            linked[name] = pairs[0]
    return linked
