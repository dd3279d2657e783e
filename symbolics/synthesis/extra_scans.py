"""Scans and order statistics along one axis of static size n, and NaN-aware elementwise ops.

cummax, cumprod, logcumsumexp, ... as an n x n lower-triangular mask and one reduction;
kthvalue and medians as a sort; scatter and index reductions (amax, amin, prod, mean) as a
one-hot index mask: exact, O(n^2) memory along the axis.

Written in plain torch ops for ops torch decomposes into nothing the exporter converts; the
decomposition replay traces them like ``torch._decomp``'s (see
:mod:`fixport.symbolics.synthesis.decomposition`). Add your own the same way:
``SCAN_DECOMPOSITIONS[torch.ops.aten.<op>.<overload>] = function``.
Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import itertools
import math

import torch

aten = torch.ops.aten


def _lower_triangle(n: int) -> torch.Tensor:
    """mask[i, j] = j <= i: row i sees the prefix that ends at i."""
    positions = torch.arange(n)
    return positions.unsqueeze(1) >= positions.unsqueeze(0)


def _prefix_rows(x: torch.Tensor, dim: int, fill: float) -> tuple[torch.Tensor, torch.Tensor]:
    """x moved so ``dim`` is last, repeated as rows (..., n, n) where row i holds x[..., :i+1] and
    ``fill`` elsewhere; and the mask."""
    last = x.movedim(dim, -1)
    mask = _lower_triangle(last.shape[-1])
    return torch.where(mask, last.unsqueeze(-2), torch.full((), fill, dtype=x.dtype)), mask


def _lowest(dtype: torch.dtype) -> float:
    return -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min


def _scan_extreme(x: torch.Tensor, dim: int, largest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    fill = _lowest(x.dtype) if largest else -_lowest(x.dtype)
    rows, mask = _prefix_rows(x, dim, fill)
    values = rows.amax(-1) if largest else rows.amin(-1)
    # torch keeps the last position that reaches the running extreme
    hits = (rows == values.unsqueeze(-1)) & mask
    indices = torch.where(hits, torch.arange(rows.shape[-1]), -1).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def cummax(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _scan_extreme(x, dim, largest=True)


def cummin(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _scan_extreme(x, dim, largest=False)


def logcumsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dim() == 0:
        return x.clone()
    rows, _ = _prefix_rows(x, dim, -math.inf)
    top = rows.amax(-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top)  # all -inf rows stay -inf
    return (torch.log(torch.exp(rows - top).sum(-1)) + top.squeeze(-1)).movedim(-1, dim)


def cumprod(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    x = x.to(dtype) if dtype is not None else x
    if x.dim() == 0:
        return x.clone()
    rows, _ = _prefix_rows(x, dim, 1)
    return rows.prod(-1).movedim(-1, dim)


def _order_statistic(x: torch.Tensor, position: torch.Tensor | int, dim: int,
                     keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The value at sorted ``position`` along ``dim`` and where it was."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    ordered, order = torch.sort(x, dim=dim)
    if isinstance(position, int):
        position = torch.full_like(ordered.narrow(dim, 0, 1), position, dtype=torch.int64)
    values, indices = ordered.gather(dim, position), order.gather(dim, position)
    return (values, indices) if keepdim else (values.squeeze(dim), indices.squeeze(dim))


def kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return _order_statistic(x, k - 1, dim, keepdim)


def median_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    size = x.shape[dim] if x.dim() else 1
    return _order_statistic(x, (size - 1) // 2, dim, keepdim)  # torch's median is the lower one


def nanmedian_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    counted = (~torch.isnan(x)).sum(dim, keepdim=True)  # sort puts NaN last: the median of the rest
    return _order_statistic(x, torch.clamp(counted - 1, min=0) // 2, dim, keepdim)


def median_all(x: torch.Tensor) -> torch.Tensor:
    """The lower median of every element (NaN when there is one, as torch)."""
    flat = x.reshape(-1)
    value = median_dim(flat, 0)[0]
    return torch.where(torch.isnan(flat).any(), torch.full_like(value, math.nan), value) \
        if x.dtype.is_floating_point else value


def nanmedian_all(x: torch.Tensor) -> torch.Tensor:
    """The lower median of the elements that are not NaN."""
    return nanmedian_dim(x.reshape(-1), 0)[0]


def mode(x: torch.Tensor, dim: int = -1, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The most frequent value along ``dim`` (the smallest of those tied, as torch) and the last
    index it is at, from the counts of every pair of equal elements (for the small dims mode has)."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    dim = dim % x.dim()
    moved = x.movedim(dim, -1)
    equal = moved.unsqueeze(-1) == moved.unsqueeze(-2)  # (..., n, n)
    counts = equal.sum(-1)
    most = counts.amax(-1, keepdim=True)
    candidates = torch.where(counts == most, moved, torch.full_like(moved, math.inf) if moved.dtype.is_floating_point
                             else torch.full_like(moved, torch.iinfo(moved.dtype).max))
    values = candidates.amin(-1, keepdim=True)
    positions = torch.arange(moved.shape[-1]).expand_as(moved)
    indices = torch.where(moved == values, positions, torch.full_like(positions, -1)).amax(-1, keepdim=True)
    values, indices = values.movedim(-1, dim), indices.movedim(-1, dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


def fmax(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, torch.maximum(a, b)))


def fmin(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, torch.minimum(a, b)))


def hypot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(a * a + b * b)


def _dense_scatter(base: torch.Tensor, index: torch.Tensor, source: torch.Tensor, reduce: str,
                   include_self: bool) -> torch.Tensor:
    """Scatter ``source`` (..., n_in) into ``base`` (..., n_out) at ``index`` (..., n_in) along the last
    axis, reducing collisions: a one-hot (n_in x n_out) mask and one reduction, no ScatterElements
    (whose min/max reductions need opset 18)."""
    hits = index.unsqueeze(-1) == torch.arange(base.shape[-1])  # (..., n_in, n_out)
    spread = source.unsqueeze(-1)
    count = hits.sum(-2)
    if reduce in ("amax", "amin"):
        fill = _lowest(source.dtype) if reduce == "amax" else -_lowest(source.dtype)
        rows = torch.where(hits, spread, torch.full((), fill, dtype=source.dtype))
        reduced = rows.amax(-2) if reduce == "amax" else rows.amin(-2)
        if include_self:
            reduced = torch.maximum(reduced, base) if reduce == "amax" else torch.minimum(reduced, base)
    elif reduce == "prod":
        reduced = torch.where(hits, spread, torch.ones((), dtype=source.dtype)).prod(-2)
        reduced = reduced * base if include_self else reduced
    else:  # sum, mean
        reduced = torch.where(hits, spread, torch.zeros((), dtype=source.dtype)).sum(-2)
        reduced = reduced + base if include_self else reduced
        if reduce == "mean":
            reduced = reduced / (count + int(include_self)).clamp(min=1).to(reduced.dtype)
            if not source.dtype.is_floating_point:
                reduced = torch.floor(reduced)
    return torch.where(count > 0, reduced.to(base.dtype), base)


def scatter_reduce(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str, *,
                   include_self: bool = True) -> torch.Tensor:
    if x.dim() == 0:
        return scatter_reduce(x.reshape(1), 0, index.reshape(1), src.reshape(1), reduce,
                              include_self=include_self).reshape(())
    dim = dim % x.dim()
    if [s for d, s in enumerate(index.shape) if d != dim] != [s for d, s in enumerate(x.shape) if d != dim]:
        raise NotImplementedError("scatter_reduce with an index narrower than self is not decomposed")
    source = src.narrow(dim, 0, index.shape[dim]) if src.shape[dim] != index.shape[dim] else src
    result = _dense_scatter(x.movedim(dim, -1), index.movedim(dim, -1), source.movedim(dim, -1), reduce,
                            include_self)
    return result.movedim(-1, dim)


def index_reduce(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, reduce: str, *,
                 include_self: bool = True) -> torch.Tensor:
    if x.dim() == 0:
        return index_reduce(x.reshape(1), 0, index.reshape(-1), source.reshape(-1), reduce,
                            include_self=include_self).reshape(())
    dim = dim % x.dim()
    result = _dense_scatter(x.movedim(dim, -1), index, source.movedim(dim, -1), reduce, include_self)
    return result.movedim(-1, dim)


def squeeze_dims(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """squeeze over a list of dims (the exporter's squeeze takes one) as a reshape to the static shape."""
    dropped = {d % x.dim() for d in dims if x.dim() and x.shape[d % x.dim()] == 1}
    return x.reshape([size for axis, size in enumerate(x.shape) if axis not in dropped])


def copysign(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    negative = (b < 0) | ((b == 0) & (1 / b < 0))  # -0.0 counts as negative, as its sign bit says
    return torch.where(negative, -torch.abs(a), torch.abs(a))



def frexp(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x = mantissa * 2^exponent with 0.5 <= |mantissa| < 1; log2 rounds near powers of two, so the
    exponent is corrected by one either way."""
    finite = torch.isfinite(x) & (x != 0)
    magnitude = torch.where(finite, torch.abs(x), torch.ones_like(x))
    exponent = torch.floor(torch.log2(magnitude)) + 1
    mantissa = magnitude / torch.pow(2.0, exponent)
    exponent = torch.where(mantissa >= 1, exponent + 1, torch.where(mantissa < 0.5, exponent - 1, exponent))
    mantissa = torch.where(finite, torch.sign(x) * magnitude / torch.pow(2.0, exponent), x)
    return mantissa, torch.where(finite, exponent, torch.zeros_like(exponent)).to(torch.int32)


def searchsorted(sorted_sequence: torch.Tensor, values: torch.Tensor, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: torch.Tensor | None = None) -> torch.Tensor:
    """How many sequence elements lie below each value (at or below with ``right``): a comparison
    of every pair, summed."""
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    right = right or side == "right"
    sequence = sorted_sequence.unsqueeze(-2)  # (..., 1, n)
    probe = values.unsqueeze(-1)  # (..., m, 1)
    below = (sequence <= probe) if right else (sequence < probe)
    return below.sum(-1).to(torch.int32 if out_int32 else torch.int64)


def index_fill(x: torch.Tensor, dim: int, index: torch.Tensor, value) -> torch.Tensor:
    if x.dim() == 0:
        return index_fill(x.reshape(1), 0, index, value).reshape(())
    dim = dim % x.dim()
    hit = (index.reshape(-1, 1) == torch.arange(x.shape[dim])).any(0)  # (size along dim,)
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    return torch.where(hit.reshape(shape), torch.as_tensor(value, dtype=x.dtype), x)


def _histogram_edges(values: torch.Tensor, bins: int, bounds: tuple[float, float] | None) -> torch.Tensor:
    """``bins + 1`` evenly spaced edges over ``bounds``, else over the values' min and max (widened
    by 0.5 each way when they are equal, as torch)."""
    if bounds is not None:
        low = torch.tensor(float(bounds[0]), dtype=values.dtype)
        high = torch.tensor(float(bounds[1]), dtype=values.dtype)
    else:
        low, high = values.amin(0), values.amax(0)  # one column: torch_lib needs the dim
        same = low == high
        low, high = torch.where(same, low - 0.5, low), torch.where(same, high + 0.5, high)
    steps = torch.arange(bins + 1, dtype=values.dtype) / bins
    return torch.where(torch.arange(bins + 1) == bins, high, low + (high - low) * steps)


def _bin_of(values: torch.Tensor, edges: torch.Tensor, bins: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each value's bin (the last bin is closed on the right) and whether it falls in any."""
    low, high = edges[0], edges[-1]
    position = torch.floor((values - low) / (high - low) * bins).to(torch.int64).clamp(0, bins - 1)
    # the division can land one bin off next to an edge: compare with the edges themselves
    position = torch.where(values < edges[position], position - 1, position).clamp(min=0)
    position = torch.where((values >= edges[(position + 1).clamp(max=bins)]) & (position < bins - 1), position + 1,
                           position)
    return position, (values >= low) & (values <= high)


def _histogram_counts(rows: torch.Tensor, bins: list[int], bounds: list[float] | None,
                      weight: torch.Tensor | None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The histogram of ``rows`` (N, D) over ``bins`` per column, and the edges per column."""
    edges, flat, inside = [], torch.zeros(rows.shape[0], dtype=torch.int64), torch.ones(rows.shape[0], dtype=torch.bool)
    for column, count in enumerate(bins):
        pair = (bounds[2 * column], bounds[2 * column + 1]) if bounds is not None else None
        column_edges = _histogram_edges(rows[:, column], count, pair)
        position, hit = _bin_of(rows[:, column], column_edges, count)
        edges.append(column_edges)
        flat, inside = flat * count + position, inside & hit
    cells = math.prod(bins)
    weights = (weight.reshape(-1).to(rows.dtype) if weight is not None else torch.ones(rows.shape[0], dtype=rows.dtype))
    one_hot = (flat.unsqueeze(-1) == torch.arange(cells)) & inside.unsqueeze(-1)
    return (one_hot.to(rows.dtype) * weights.unsqueeze(-1)).sum(0).reshape(bins), edges


def _as_density(hist: torch.Tensor, edges: list[torch.Tensor]) -> torch.Tensor:
    """Counts divided by their total and by each cell's volume."""
    volume = torch.ones((), dtype=hist.dtype)
    for axis, column_edges in enumerate(edges):
        shape = [1] * len(edges)
        shape[axis] = -1
        volume = volume * (column_edges[1:] - column_edges[:-1]).reshape(shape)
    return hist / hist.sum() / volume


def histogram(x: torch.Tensor, bins: int = 100, *, range=None, weight=None, density: bool = False):
    """Counts of ``x`` in ``bins`` evenly spaced bins, and their edges (torch.histogram)."""
    hist, edges = _histogram_counts(x.reshape(-1, 1), [bins], range, weight)
    return (_as_density(hist, edges) if density else hist), edges[0]


def histogramdd_bin_edges(x: torch.Tensor, bins, *, range=None, weight=None, density: bool = False):
    return _histogram_counts(x.reshape(-1, x.shape[-1]), list(bins), range, weight)[1]


def histogramdd_from_bin_cts(x: torch.Tensor, bins, *, range=None, weight=None, density: bool = False):
    hist, edges = _histogram_counts(x.reshape(-1, x.shape[-1]), list(bins), range, weight)
    return _as_density(hist, edges) if density else hist


def segment_reduce(data: torch.Tensor, reduce: str, *, lengths=None, indices=None, offsets=None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> torch.Tensor:
    """``reduce`` over consecutive segments of ``data`` along ``axis``, given by their ``lengths`` or
    ``offsets`` (one dimension); ``initial`` takes part in every segment, as torch, and fills empty ones."""
    if indices is not None or (lengths if lengths is not None else offsets).dim() != 1:
        raise NotImplementedError("segment_reduce: only one-dimensional lengths or offsets")
    if lengths is not None:
        ends = torch.cumsum(lengths, 0)
        starts = ends - lengths
    else:
        starts, ends = offsets[:-1], offsets[1:]
    values = data.movedim(axis, -1).unsqueeze(-2)  # (..., 1, n)
    position = torch.arange(data.shape[axis])
    member = (position >= starts.unsqueeze(-1)) & (position < ends.unsqueeze(-1))  # (segments, n)
    count = member.sum(-1).to(data.dtype)
    start = 0.0 if initial is None else float(initial)
    if reduce in ("sum", "mean"):
        total = torch.where(member, values, torch.zeros_like(values)).sum(-1) + start
        result = total if reduce == "sum" else total / count
        if reduce == "mean" and initial is not None:
            result = torch.where(count == 0, torch.full_like(result, start), result)
    elif reduce == "prod":
        result = torch.where(member, values, torch.ones_like(values)).prod(-1) * (1.0 if initial is None else start)
    elif reduce in ("max", "min"):
        fill = -math.inf if reduce == "max" else math.inf
        pick = torch.amax if reduce == "max" else torch.amin
        result = pick(torch.where(member, values, torch.full_like(values, fill)), -1)
        if initial is not None:
            result = (torch.maximum if reduce == "max" else torch.minimum)(result, torch.full_like(result, start))
    else:
        raise NotImplementedError(f"segment_reduce: reduce={reduce!r}")
    return result.movedim(-1, axis)


def diagonal_scatter(x: torch.Tensor, source: torch.Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> torch.Tensor:
    """``x`` with its diagonal (``offset``, between ``dim1`` and ``dim2``) replaced by ``source``,
    without writing in place: each diagonal position reads its element of ``source``."""
    if source.shape[-1] == 0:  # an offset past the matrix: no diagonal to write
        return x.clone()
    moved = x.movedim((dim1, dim2), (-2, -1))
    rows, columns = moved.shape[-2:]
    row, column = torch.arange(rows).unsqueeze(-1), torch.arange(columns).unsqueeze(0)
    on_diagonal = column - row == offset
    along = (row if offset >= 0 else column).expand(rows, columns).clamp(0, max(source.shape[-1] - 1, 0))
    spread = source[..., along.reshape(-1)].reshape(*source.shape[:-1], rows, columns)
    return torch.where(on_diagonal, spread.to(x.dtype), moved).movedim((-2, -1), (dim1, dim2))


def put(x: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False) -> torch.Tensor:
    """``x`` seen flat, ``source`` written (or added) at ``index``; negative indices count from the end."""
    flat, positions = x.reshape(-1), torch.remainder(index.reshape(-1), x.numel())
    values = source.reshape(-1).to(x.dtype)
    if accumulate:
        return flat.index_add(0, positions, values).reshape(x.shape)
    return flat.index_put((positions,), values).reshape(x.shape)


def nonzero_static(x: torch.Tensor, *, size: int, fill_value: int = -1) -> torch.Tensor:
    """The first ``size`` nonzero positions in row-major order, padded with ``fill_value``: each
    output row picks the element whose running count of nonzeros equals it."""
    flat = (x.reshape(-1) != 0)
    rank = torch.cumsum(flat.to(torch.int64), 0) - 1
    positions = torch.arange(flat.numel())
    slots = torch.arange(size).unsqueeze(1)  # (size, 1)
    chosen = (rank.unsqueeze(0) == slots) & flat.unsqueeze(0)  # (size, numel)
    found = chosen.any(1)
    linear = (chosen.to(torch.int64) * positions).sum(1)
    coordinates = []
    for extent in reversed(x.shape):
        coordinates.append(torch.remainder(linear, extent))
        linear = torch.div(linear, extent, rounding_mode="floor")
    indices = torch.stack(coordinates[::-1], 1) if coordinates else torch.zeros(size, 0, dtype=torch.int64)
    return torch.where(found.unsqueeze(1), indices, torch.full_like(indices, fill_value))


def _adaptive_max_pool(x: torch.Tensor, output_size: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each output cell's window (torch's floor/ceil bounds), its max and the flat spatial index of it."""
    spatial = list(x.shape[x.dim() - len(output_size):])
    lead = x.shape[:x.dim() - len(output_size)]
    flat = x.reshape(*lead, -1) if spatial else x
    positions = torch.arange(math.prod(spatial)).reshape(spatial)
    values, indices = [], []
    for cell in itertools.product(*[range(o) for o in output_size]):
        inside = torch.ones(spatial, dtype=torch.bool)
        for axis, (i, n, o) in enumerate(zip(cell, spatial, output_size)):
            along = torch.arange(n).reshape([n if a == axis else 1 for a in range(len(spatial))])
            inside = inside & (along >= (i * n) // o) & (along < -(-((i + 1) * n) // o))
        rows = torch.where(inside.reshape(-1), flat, torch.full((), -math.inf, dtype=x.dtype))
        best = rows.amax(-1, keepdim=True)
        first = torch.where((rows == best) & inside.reshape(-1), positions.reshape(-1), math.prod(spatial)).amin(-1)
        values.append(best.squeeze(-1))
        indices.append(first)
    shape = (*lead, *output_size)
    return torch.stack(values, -1).reshape(shape), torch.stack(indices, -1).reshape(shape)


def adaptive_max_pool2d(x: torch.Tensor, output_size: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    return _adaptive_max_pool(x, list(output_size))


SCAN_DECOMPOSITIONS = {
    aten.cummax.default: cummax,
    aten.cummin.default: cummin,
    aten.logcumsumexp.default: logcumsumexp,
    aten.cumprod.default: cumprod,
    aten.kthvalue.default: kthvalue,
    aten.median.dim: median_dim,
    aten.median.default: median_all,
    aten.nanmedian.default: nanmedian_all,
    aten.mode.default: mode,
    aten.nanmedian.dim: nanmedian_dim,
    aten.fmax.default: fmax,
    aten.fmin.default: fmin,
    aten.hypot.default: hypot,
    aten.scatter_reduce.two: scatter_reduce,
    aten.index_reduce.default: index_reduce,
    aten.squeeze.dims: squeeze_dims,
    aten.copysign.Tensor: copysign,
    aten.frexp.Tensor: frexp,
    aten.searchsorted.Tensor: searchsorted,
    aten.index_fill.int_Scalar: index_fill,
    aten.index_fill.int_Tensor: index_fill,
    aten.nonzero_static.default: nonzero_static,
    aten.put.default: put,
    aten.segment_reduce.default: segment_reduce,
    aten.diagonal_scatter.default: diagonal_scatter,
    aten.histogram.bin_ct: histogram,
    aten._histogramdd_bin_edges.default: histogramdd_bin_edges,
    aten._histogramdd_from_bin_cts.default: histogramdd_from_bin_cts,
    aten.adaptive_max_pool2d.default: adaptive_max_pool2d,
    aten.adaptive_max_pool3d.default: adaptive_max_pool2d,
}
