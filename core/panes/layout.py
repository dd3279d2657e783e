"""Top-to-bottom layered layout of the visible items of a graph (no Qt, numpy-vectorised).

Steps (a cheap Sugiyama): longest-path ranking in first-appearance order (O(V+E), edges that
point backwards — only possible between collapsed groups — are ignored), dummy nodes for long
edges when the graph is small, barycentre ordering sweeps run on all ranks at once, then x
positions that follow neighbours while a segmented running max/min keeps boxes apart. Output
arrays are ready for batched drawing. ``compute_layout`` is a plain function that polls
``cancelled`` so it can run on a worker thread; ``LayoutCache`` memoises results.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from fixport.core.panes.grouping import (
    GroupTree,
    VisibleItems,
    gc_paused,
    graph_version,
    scope_of,
    tree_for,
    visible_items,
)
from fixport.core.panes.layout_constants import (
    ARROW_HALF_WIDTH,
    ARROW_LENGTH,
    BEZIER_SAMPLES,
    CANCEL_POLL_EVERY,
    DUMMY_NODE_LIMIT,
    DUMMY_WIDTH,
    EDGE_GAP,
    GROUP_HEIGHT,
    GROUP_MAX_WIDTH,
    GROUP_MIN_WIDTH,
    LARGE_GRAPH_ORDER_SWEEPS,
    LAYOUT_CACHE_ENTRIES,
    MAX_LABEL_CHARS,
    NODE_GAP,
    NODE_HEIGHT,
    NODE_MAX_WIDTH,
    NODE_MIN_WIDTH,
    NODE_PADDING_X,
    POSITION_ITERATIONS_LARGE,
    POSITION_ITERATIONS_SMALL,
    RANK_GAP,
    SMALL_GRAPH_LIMIT,
    SMALL_GRAPH_ORDER_SWEEPS,
    SMOOTH_EDGE_LIMIT,
    SUBTITLE_CHAR_WIDTH,
    TITLE_CHAR_WIDTH,
)
from fixport.core.words.cancel import (
    CancelCallback,
    ProgressCallback,
    check_cancelled,
    report,
)
from fixport.core.words.graph import Graph, Node

__all__ = ["Layout", "LayoutCache", "compute_layout", "LAYOUT_CACHE"]


@dataclass
class Layout:
    """Positions of visible items (box centres) and edge geometry as flat arrays."""

    items: VisibleItems
    expanded: frozenset[str]
    x: np.ndarray  # float64 centre x per item
    y: np.ndarray
    width: np.ndarray
    height: np.ndarray
    rank: np.ndarray  # int32
    titles: list[str]
    subtitles: list[str]
    edge_points: np.ndarray  # float64 (P, 2): every edge's polyline, concatenated
    edge_offsets: np.ndarray  # int64 (E + 1): edge e uses points[offsets[e]:offsets[e + 1]]
    segments: np.ndarray  # float64 (S, 4) x1, y1, x2, y2 — laid out like QLineF for drawLines
    segment_edge: np.ndarray  # int32 (S,) edge index of each segment
    arrows: np.ndarray  # float64 (E, 3, 2) arrowhead triangles at the consumer end
    bounds: tuple[float, float, float, float]  # left, top, right, bottom
    timings: dict[str, float] = field(default_factory=dict)

    def index_of(self, key: str) -> int | None:
        """Item index of a node id or collapsed group path, None when not visible."""
        lookup = self.__dict__.get("_index")
        if lookup is None:
            lookup = {key: index for index, key in enumerate(self.items.keys)}
            self.__dict__["_index"] = lookup
        return lookup.get(key)


def _elide(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def _labels(graph: Graph, tree: GroupTree, items: VisibleItems) -> tuple[list[str], list[str]]:
    nodes = graph.nodes
    titles: list[str] = []
    subtitles: list[str] = []
    for ref, is_group in zip(items.ref.tolist(), items.is_group.tolist()):
        if is_group:
            group = tree.groups[tree.paths[ref]]
            title = group.label
            if title.isdigit() and group.parent:  # "0" says little; "layer1/0" does
                title = f"{tree.groups[group.parent].label.rsplit('/', 1)[-1]}/{title}"
            titles.append(_elide(title))
            subtitles.append(f"{group.node_count:,} nodes")
        else:
            node = nodes[ref]
            titles.append(_elide(node_title(node)))
            scope = scope_of(node)
            subtitles.append(_elide(scope.rsplit("/", 1)[-1] if scope else (node.name or node.id)))
    return titles, subtitles


def node_title(node: Node) -> str:
    """The op name; a diagnosis placeholder shows the TorchScript kind it stands for."""
    if node.unsupported and isinstance(node.attributes.get("kind"), str):
        return "⚠ " + node.attributes["kind"].split("::")[-1]
    return node.op_type


def _sizes(titles: list[str], subtitles: list[str], is_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    title_chars = np.fromiter((len(t) for t in titles), dtype=np.float64, count=len(titles))
    subtitle_chars = np.fromiter((len(s) for s in subtitles), dtype=np.float64, count=len(subtitles))
    text = np.maximum(title_chars * TITLE_CHAR_WIDTH, subtitle_chars * SUBTITLE_CHAR_WIDTH) + 2 * NODE_PADDING_X
    width = np.where(is_group, np.clip(text + NODE_PADDING_X * 2, GROUP_MIN_WIDTH, GROUP_MAX_WIDTH),
                     np.clip(text, NODE_MIN_WIDTH, NODE_MAX_WIDTH))
    height = np.where(is_group, GROUP_HEIGHT, NODE_HEIGHT)
    return width, height


def _relax(count: int, first: list[int], second: list[int], initial: list[int], step: int,
           cancelled: CancelCallback | None) -> list[int]:
    """rank[second] = max/min(rank[second], rank[first] + step) over edges in a valid order."""
    rank = list(initial)
    for start in range(0, len(first), CANCEL_POLL_EVERY):
        check_cancelled(cancelled)
        chunk = zip(first[start:start + CANCEL_POLL_EVERY], second[start:start + CANCEL_POLL_EVERY])
        if step > 0:
            for a, b in chunk:
                r = rank[a] + 1
                if r > rank[b]:
                    rank[b] = r
        else:
            for a, b in chunk:
                r = rank[a] - 1
                if r < rank[b]:
                    rank[b] = r
    return rank


def _longest_path_ranks(count: int, src: np.ndarray, dst: np.ndarray, cancelled: CancelCallback | None) -> np.ndarray:
    """Longest path from the sources (a valid layering, O(V+E)), then every node that feeds
    something moves down to just above its first user (constants, weights, shape branches)."""
    forward = src < dst  # items are in first-appearance order: backward edges close cycles
    fsrc, fdst = src[forward], dst[forward]
    down = np.argsort(fdst, kind="stable")
    asap = _relax(count, fsrc[down].tolist(), fdst[down].tolist(), [0] * count, +1, cancelled)
    up = np.argsort(-fsrc, kind="stable")
    has_user = np.zeros(count, dtype=bool)
    has_user[fsrc] = True
    unset = count * 4 + 8  # larger than any rank
    initial = np.where(has_user, unset, np.asarray(asap, dtype=np.int64)).tolist()
    alap = _relax(count, fdst[up].tolist(), fsrc[up].tolist(), initial, -1, cancelled)
    ranks = np.asarray(alap, dtype=np.int64)
    return ranks - ranks.min() if count else ranks


@dataclass
class _LayerGraph:
    """Items plus dummy nodes, with every forward edge split into rank-to-rank links."""

    rank: np.ndarray
    width: np.ndarray
    is_dummy: np.ndarray
    link_src: np.ndarray
    link_dst: np.ndarray
    dummy_count: np.ndarray  # per drawn edge
    dummy_base: np.ndarray  # per drawn edge: layer index of its first dummy


def _layer_graph(ranks: np.ndarray, width: np.ndarray, src: np.ndarray, dst: np.ndarray) -> _LayerGraph:
    count = len(ranks)
    span = ranks[dst] - ranks[src]
    dummies = np.where(span > 1, span - 1, 0)
    if count + int(dummies.sum()) > DUMMY_NODE_LIMIT:
        dummies = np.zeros_like(dummies)
    base = count + np.cumsum(dummies) - dummies
    forward = span > 0
    f_src, f_dst, f_dum, f_base = src[forward], dst[forward], dummies[forward], base[forward]
    lengths = f_dum + 2  # vertices on each chain: source, dummies, target
    starts = np.cumsum(lengths) - lengths
    step = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    chain = np.where(step == 0, np.repeat(f_src, lengths),
                     np.where(step == np.repeat(lengths - 1, lengths), np.repeat(f_dst, lengths),
                              np.repeat(f_base, lengths) + step - 1))
    not_last = step < np.repeat(lengths - 1, lengths)
    positions = np.flatnonzero(not_last)
    total_dummies = int(dummies.sum())
    dummy_rank = np.repeat(ranks[src] + 1, dummies) + (
        np.arange(total_dummies) - np.repeat(base - count, dummies))
    return _LayerGraph(
        rank=np.concatenate([ranks, dummy_rank]).astype(np.int64),
        width=np.concatenate([width, np.full(total_dummies, DUMMY_WIDTH)]),
        is_dummy=np.concatenate([np.zeros(count, bool), np.ones(total_dummies, bool)]),
        link_src=chain[positions].astype(np.int64), link_dst=chain[positions + 1].astype(np.int64),
        dummy_count=dummies, dummy_base=base,
    )


def _segmented_cummax(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running max that restarts at each segment (``segment`` non-decreasing, dense ids)."""
    if len(values) == 0:
        return values
    offset = float(values.max() - values.min()) + 1.0
    shifted = values + segment * offset
    return np.maximum.accumulate(shifted) - segment * offset


class _Packer:
    """Places one ordering of the layer graph: packed x per rank with minimum spacing."""

    def __init__(self, layer: _LayerGraph) -> None:
        self.layer = layer
        self.rank_count = int(layer.rank.max()) + 1 if len(layer.rank) else 0

    def arrange(self, order_key: np.ndarray) -> None:
        """Sort by (rank, order_key) and precompute the spacing within each rank."""
        layer = self.layer
        self.perm = np.lexsort((order_key, layer.rank))
        rank_sorted = layer.rank[self.perm]
        width_sorted = layer.width[self.perm]
        dummy_sorted = layer.is_dummy[self.perm]
        new_rank = np.empty(len(rank_sorted), bool)
        new_rank[:1] = True
        new_rank[1:] = rank_sorted[1:] != rank_sorted[:-1]
        gap = np.where(dummy_sorted[1:] | dummy_sorted[:-1], EDGE_GAP, NODE_GAP)
        spacing = np.zeros(len(rank_sorted))
        spacing[1:] = (width_sorted[1:] + width_sorted[:-1]) / 2 + gap
        spacing[new_rank] = 0.0
        cumulative = np.cumsum(spacing)
        start_index = np.maximum.accumulate(np.where(new_rank, np.arange(len(spacing)), 0))
        self.offset = cumulative - cumulative[start_index]  # S: packed offset within the rank
        self.rank_sorted = rank_sorted

    def packed_centred(self) -> np.ndarray:
        """x per layer node: each rank packed tightly and centred on 0."""
        span = np.zeros(self.rank_count)
        np.maximum.at(span, self.rank_sorted, self.offset)
        x = np.empty(len(self.perm))
        x[self.perm] = self.offset - span[self.rank_sorted] / 2
        return x

    def closest_feasible(self, desired: np.ndarray) -> np.ndarray:
        """x near ``desired`` that keeps the order and spacing: mean of left- and right-packing."""
        wanted = desired[self.perm] - self.offset
        left = self.offset + _segmented_cummax(wanted, self.rank_sorted)
        top_rank = self.rank_count - 1
        right = self.offset - _segmented_cummax((-wanted)[::-1], (top_rank - self.rank_sorted)[::-1])[::-1]
        x = np.empty(len(self.perm))
        x[self.perm] = (left + right) / 2
        return x


def _neighbour_mean(x: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Mean x of each node's neighbours along src -> dst; the node's own x when it has none."""
    count = len(x)
    total = np.bincount(dst, weights=x[src], minlength=count)
    seen = np.bincount(dst, minlength=count)
    return np.where(seen > 0, total / np.maximum(seen, 1), x)


def _order_and_place(layer: _LayerGraph, initial_key: np.ndarray, cancelled: CancelCallback | None) -> np.ndarray:
    small = len(layer.rank) <= SMALL_GRAPH_LIMIT
    packer = _Packer(layer)
    packer.arrange(initial_key)
    x = packer.packed_centred()
    both_src = np.concatenate([layer.link_src, layer.link_dst])
    both_dst = np.concatenate([layer.link_dst, layer.link_src])
    for sweep in range(SMALL_GRAPH_ORDER_SWEEPS if small else LARGE_GRAPH_ORDER_SWEEPS):
        check_cancelled(cancelled)
        down = sweep % 2 == 0
        bary = _neighbour_mean(x, layer.link_src, layer.link_dst) if down else \
            _neighbour_mean(x, layer.link_dst, layer.link_src)
        packer.arrange(np.lexsort((x, bary)).argsort())
        x = packer.packed_centred()
    for _ in range(POSITION_ITERATIONS_SMALL if small else POSITION_ITERATIONS_LARGE):
        check_cancelled(cancelled)
        x = packer.closest_feasible(_neighbour_mean(x, both_src, both_dst))
    return x


def _edge_polylines(layout_x: np.ndarray, rank_top: np.ndarray, rank_height: np.ndarray, layer: _LayerGraph,
                    x: np.ndarray, y: np.ndarray, height: np.ndarray, src: np.ndarray, dst: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Every drawn edge as points: source bottom, through its dummies' rank bands, target top."""
    dummies = layer.dummy_count
    count = dummies * 2 + 2
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(count)
    step = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], count)
    last = np.repeat(count - 1, count)
    edge = np.repeat(np.arange(len(src)), count)
    dummy = np.repeat(layer.dummy_base, count) + np.maximum(step - 1, 0) // 2
    dummy = np.where((step > 0) & (step < last), dummy, 0)
    dummy_rank = layer.rank[dummy]
    px = np.where(step == 0, x[src[edge]], np.where(step == last, x[dst[edge]], layout_x[dummy]))
    py_dummy = rank_top[dummy_rank] + np.where((step - 1) % 2 == 0, 0.0, rank_height[dummy_rank])
    py = np.where(step == 0, y[src[edge]] + height[src[edge]] / 2,
                  np.where(step == last, y[dst[edge]] - height[dst[edge]] / 2, py_dummy))
    return np.column_stack([px, py]), offsets


def _smooth(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace each straight piece by a sampled vertical-tangent cubic Bézier."""
    piece_start = np.ones(len(points), bool)
    piece_start[offsets[1:] - 1] = False  # the last point of an edge starts no piece
    a = points[piece_start]
    b = points[np.flatnonzero(piece_start) + 1]
    pull = np.maximum(np.abs(b[:, 1] - a[:, 1]) * 0.5, 1.0)[:, None]
    down = np.array([0.0, 1.0])
    c1, c2 = a + pull * down, b - pull * down
    t = np.linspace(0.0, 1.0, BEZIER_SAMPLES + 1)[:-1][None, :, None]
    curve = ((1 - t) ** 3 * a[:, None] + 3 * (1 - t) ** 2 * t * c1[:, None]
             + 3 * (1 - t) * t ** 2 * c2[:, None] + t ** 3 * b[:, None])
    pieces = np.diff(offsets) - 1
    per_edge = pieces * BEZIER_SAMPLES + 1
    new_offsets = np.zeros_like(offsets)
    new_offsets[1:] = np.cumsum(per_edge)
    result = np.empty((int(new_offsets[-1]), 2))
    is_end = np.zeros(len(result), bool)
    is_end[new_offsets[1:] - 1] = True
    result[~is_end] = curve.reshape(-1, 2)
    result[is_end] = points[offsets[1:] - 1]
    return result, new_offsets


def _segments_and_arrows(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keep = np.ones(max(len(points) - 1, 0), bool)
    keep[offsets[1:-1] - 1] = False
    segments = np.ascontiguousarray(np.column_stack([points[:-1][keep], points[1:][keep]]))
    segment_edge = np.repeat(np.arange(len(offsets) - 1, dtype=np.int32), np.diff(offsets) - 1)
    tip = points[offsets[1:] - 1]
    before = points[offsets[1:] - 2]
    direction = tip - before
    direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-9)
    normal = np.column_stack([-direction[:, 1], direction[:, 0]])
    base = tip - direction * ARROW_LENGTH
    arrows = np.stack([tip, base + normal * ARROW_HALF_WIDTH, base - normal * ARROW_HALF_WIDTH], axis=1)
    return segments, segment_edge, arrows


def compute_layout(graph: Graph, expanded: frozenset[str], *, progress: ProgressCallback | None = None,
                   cancelled: CancelCallback | None = None) -> Layout:
    """Lay out what is visible of ``graph`` with ``expanded`` groups open. Raises Cancelled."""
    with gc_paused():
        return _compute_layout(graph, expanded, progress, cancelled)


def _compute_layout(graph: Graph, expanded: frozenset[str], progress: ProgressCallback | None,
                    cancelled: CancelCallback | None) -> Layout:
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str, fraction: float) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now
        report(progress, fraction, name)
        check_cancelled(cancelled)

    check_cancelled(cancelled)
    tree = tree_for(graph)
    items = visible_items(tree, frozenset(expanded))
    lap("grouping", 0.15)
    titles, subtitles = _labels(graph, tree, items)
    width, height = _sizes(titles, subtitles, items.is_group)
    lap("labels", 0.25)
    src, dst = items.edge_src.astype(np.int64), items.edge_dst.astype(np.int64)
    ranks = _longest_path_ranks(len(items), src, dst, cancelled)
    lap("ranking", 0.45)
    layer = _layer_graph(ranks, width, src, dst)
    initial_key = np.concatenate([np.arange(len(items), dtype=np.float64),
                                  np.repeat(src.astype(np.float64) + 0.5, layer.dummy_count)])
    layer_x = _order_and_place(layer, initial_key, cancelled)
    lap("ordering", 0.75)
    rank_count = int(ranks.max()) + 1 if len(ranks) else 0
    rank_height = np.zeros(max(rank_count, 1))
    np.maximum.at(rank_height, ranks, height)
    rank_top = np.concatenate([[0.0], np.cumsum(rank_height + RANK_GAP)[:-1]])
    x = layer_x[: len(items)]
    y = rank_top[ranks] + rank_height[ranks] / 2 if len(items) else np.zeros(0)
    points, offsets = _edge_polylines(layer_x, rank_top, rank_height, layer, x, y, height, src, dst)
    if len(src) <= SMOOTH_EDGE_LIMIT and len(src):
        points, offsets = _smooth(points, offsets)
    segments, segment_edge, arrows = _segments_and_arrows(points, offsets)
    if len(items):
        left = float(min((x - width / 2).min(), points[:, 0].min() if len(points) else np.inf))
        right = float(max((x + width / 2).max(), points[:, 0].max() if len(points) else -np.inf))
        bounds = (left, float((y - height / 2).min()), right, float((y + height / 2).max()))
    else:
        bounds = (0.0, 0.0, 0.0, 0.0)
    lap("geometry", 1.0)
    return Layout(items=items, expanded=frozenset(expanded), x=x, y=y, width=width, height=height,
                  rank=ranks.astype(np.int32), titles=titles, subtitles=subtitles, edge_points=points,
                  edge_offsets=offsets, segments=segments, segment_edge=segment_edge, arrows=arrows,
                  bounds=bounds, timings=timings)


class LayoutCache:
    """LRU of layouts keyed by (graph object, graph version, expanded set). Thread-safe."""

    def __init__(self, max_entries: int = LAYOUT_CACHE_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, int, frozenset[str]], tuple[weakref.ref[Graph], Layout]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, graph: Graph, expanded: frozenset[str]) -> Layout | None:
        key = (id(graph), graph_version(graph), frozenset(expanded))
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0]() is not graph:
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def layout(self, graph: Graph, expanded: frozenset[str], *, progress: ProgressCallback | None = None,
               cancelled: CancelCallback | None = None) -> Layout:
        """The cached layout, or a new one (computed outside the lock)."""
        cached = self.get(graph, expanded)
        if cached is not None:
            return cached
        result = compute_layout(graph, expanded, progress=progress, cancelled=cancelled)
        key = (id(graph), graph_version(graph), frozenset(expanded))
        with self._lock:
            self.misses += 1
            self._entries[key] = (weakref.ref(graph), result)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return result

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


LAYOUT_CACHE = LayoutCache()
