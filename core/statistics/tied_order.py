"""A tie is not a mismatch: outputs that agree with torch up to the order of tied elements.

Top-k and sort over equal keys may return the tied elements in any order, and ONNX Runtime's TopK
orders them otherwise than torch: a detector's boxes with equal scores come out permuted. Such an
output passes, with a note, when along one axis (each slice of the axes before it on its own):

- ONNX's slices are torch's slices in another order, each matched to one within tolerance;
- every slice that moved, moved to a place whose sort key torch gives the same value (within
  tolerance). A sort key is a column of torch's values along that axis (of this output, or of another
  output with the same sizes up to that axis: a detector's scores beside its boxes) that is sorted
  along the axis, ascending or descending, and takes more than one value.

A permutation with no such tied key (rows swapped between different scores, or reversed) stays a
mismatch. Plain numpy: no torch, no ONNX Runtime.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Matching slices compares every torch slice with every ONNX one (slices along the axis times the
# output's size, in float64 temporaries): beyond these, no verdict is tried. Outputs of top-k and
# sort are small (a detector's 300 boxes): a bigger output is never checked for ties, so a failing
# feature map or logits tensor costs nothing more (per-node analysis asks for every failing value).
MAX_TIED_ELEMENTS = 262_144
MAX_TIED_SLICES = 4096
MAX_LEADING_SLICES = 4096
MAX_PAIRWISE_ELEMENTS = 4_000_000
ToleranceFor = Callable[[np.ndarray], tuple[float, float]]  # torch's array -> (rtol, atol)


@dataclass(frozen=True)
class TiedOrder:
    """An output that matches torch once its slices along ``axis`` are put back in torch's order."""

    output: str
    axis: int
    moved: int  # slices ONNX has in another place
    slices: int  # slices along the axis, over every leading index
    key: str  # the tied sort key: "out[0][..., 4]"
    reordered: np.ndarray  # ONNX's values in torch's order

    def sentence(self) -> str:
        return (f"{self.output} matches torch up to the order of tied elements: {self.moved} of {self.slices} "
                f"slice(s) along dim {self.axis} come in another order, each among slices whose sort key "
                f"{self.key} is equal (top-k or sort over equal keys may return them in any order).")


def find_tied_order(index: int, expected: Sequence[tuple[str, np.ndarray]], actual: Sequence[np.ndarray],
                    tolerance_for: ToleranceFor) -> TiedOrder | None:
    """Output ``index`` of ``actual`` as torch's (``expected``) up to the order of tied elements, or None."""
    name, reference = expected[index]
    onnx_value = np.asarray(actual[index])
    if reference.shape != onnx_value.shape or reference.dtype.kind not in "biuf" or onnx_value.dtype.kind not in "biuf":
        return None
    rtol, atol = tolerance_for(reference)
    if not _same_values(reference, onnx_value, rtol, atol):
        return None
    for axis in range(reference.ndim):
        permutation = _slice_permutation(reference, onnx_value, axis, rtol, atol)
        if permutation is None:
            continue
        moved = permutation != np.arange(permutation.shape[1])[None, :]
        if not moved.any():
            continue
        key = _tied_key(index, expected, axis, permutation, moved, tolerance_for)
        if key is None:
            continue
        leading, length = permutation.shape
        slices = onnx_value.reshape(leading, length, -1)
        reordered = np.empty_like(slices)
        for row in range(leading):
            reordered[row, permutation[row]] = slices[row]
        return TiedOrder(name, axis, int(moved.sum()), leading * length, key, reordered.reshape(onnx_value.shape))
    return None


def _same_values(reference: np.ndarray, onnx_value: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether the two hold the same values in any order (sorted, within tolerance): what any
    reordering needs, checked before matching slices pairwise (most failing values are no reordering)."""
    if reference.size > MAX_TIED_ELEMENTS:
        return False
    ours, theirs = np.sort(reference, axis=None).astype(np.float64), np.sort(onnx_value, axis=None).astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = (np.abs(theirs - ours) <= atol + rtol * np.abs(ours)) | (ours == theirs)
    return bool((close | (np.isnan(ours) & np.isnan(theirs))).all())


def _slice_permutation(reference: np.ndarray, onnx_value: np.ndarray, axis: int, rtol: float,
                       atol: float) -> np.ndarray | None:
    """(leading, length): for each ONNX slice along ``axis``, the torch slice it matches, one to one;
    None where there is no such matching."""
    length = reference.shape[axis]
    leading = math.prod(reference.shape[:axis])
    if length < 2 or length > MAX_TIED_SLICES or leading > MAX_LEADING_SLICES \
            or length * reference.size > MAX_PAIRWISE_ELEMENTS:
        return None
    torch_slices = reference.reshape(leading, length, -1).astype(np.float64)
    onnx_slices = onnx_value.reshape(leading, length, -1).astype(np.float64)
    permutation = np.empty((leading, length), dtype=np.int64)
    for row in range(leading):
        t, o = torch_slices[row][:, None, :], onnx_slices[row][None, :, :]
        with np.errstate(invalid="ignore"):
            close = (np.abs(o - t) <= atol + rtol * np.abs(t)) | (t == o) | (np.isnan(t) & np.isnan(o))
        matched = _one_to_one(close.all(axis=2))  # [torch slice, onnx slice]
        if matched is None:
            return None
        permutation[row] = matched
    return permutation


def _one_to_one(close: np.ndarray) -> np.ndarray | None:
    """For each ONNX slice (column), a torch slice (row) it is close to, each used once, its own
    place first; None where no such matching exists (augmenting paths, breadth first)."""
    length = close.shape[0]
    candidates = [[j, *(i for i in np.flatnonzero(close[:, j]) if i != j)] if close[j, j]
                  else list(np.flatnonzero(close[:, j])) for j in range(length)]
    owner = [-1] * length  # torch slice -> the ONNX slice matched to it
    assigned = [-1] * length  # ONNX slice -> its torch slice
    for start in range(length):
        if not _augment(start, candidates, owner, assigned):
            return None
    return np.asarray(assigned, dtype=np.int64)


def _augment(start: int, candidates: list[list[int]], owner: list[int], assigned: list[int]) -> bool:
    reached_from: dict[int, int] = {}
    queue = deque([start])
    while queue:
        column = queue.popleft()
        for row in candidates[column]:
            if row in reached_from:
                continue
            reached_from[row] = column
            if owner[row] == -1:
                while True:  # flip the path back to ``start``
                    column = reached_from[row]
                    previous = assigned[column]
                    owner[row], assigned[column] = column, row
                    if column == start:
                        return True
                    row = previous
            queue.append(owner[row])
    return False


def _tied_key(index: int, expected: Sequence[tuple[str, np.ndarray]], axis: int, permutation: np.ndarray,
              moved: np.ndarray, tolerance_for: ToleranceFor) -> str | None:
    """The name of a sort key along ``axis`` under which every moved slice kept its key's value."""
    own_name, reference = expected[index]
    sizes = reference.shape[:axis + 1]
    leading, length = permutation.shape
    others = [(own_name, reference)] + [item for position, item in enumerate(expected) if position != index]
    for name, values in others:
        if values.shape[:axis + 1] != sizes or values.dtype.kind not in "biuf" or values.size == 0:
            continue
        rtol, atol = tolerance_for(values)
        columns = values.reshape(leading, length, -1).astype(np.float64)
        for column in range(columns.shape[2]):
            key = columns[:, :, column]
            if _is_sort_key(key, rtol, atol) and _moves_keep_key(key, permutation, moved, rtol, atol):
                return _column_name(name, values.shape[axis + 1:], axis, column)
    return None


def _column_name(name: str, trailing: tuple[int, ...], axis: int, column: int) -> str:
    """``out[1]`` for a key that is the whole output, ``out[0][:, 4]`` for a column of it."""
    if not trailing:
        return name
    place = [":"] * (axis + 1) + [str(int(i)) for i in np.unravel_index(column, trailing)]
    return f"{name}[{', '.join(place)}]"


def _is_sort_key(key: np.ndarray, rtol: float, atol: float) -> bool:
    """Sorted along the axis in every leading slice (ascending or descending), and not one value."""
    if not np.isfinite(key).all() or np.ptp(key) <= atol + rtol * np.abs(key).max():
        return False
    slack = atol + rtol * np.abs(key[:, 1:])
    steps = np.diff(key, axis=1)
    return bool((steps >= -slack).all() or (steps <= slack).all())


def _moves_keep_key(key: np.ndarray, permutation: np.ndarray, moved: np.ndarray, rtol: float, atol: float) -> bool:
    """Each moved slice's key equals the key of the place it was moved to."""
    rows, places = np.nonzero(moved)
    own = key[rows, permutation[rows, places]]
    there = key[rows, places]
    return bool((np.abs(own - there) <= atol + rtol * np.abs(own)).all())
