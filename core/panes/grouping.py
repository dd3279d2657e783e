"""Collapsible groups from module scopes, and what is visible for a set of expanded groups.

A TorchScript scope "layer1/0/conv1" and an ONNX node name "/layer1/0/conv1/Conv" give the same
hierarchy. Groups holding a single node are dropped (the node sits in the parent),
chains of groups with one child group and no nodes are merged ("encoder/layer"), and groups with
more than ``MAX_GROUP_CHILDREN`` direct children are split into chunks "name[0..999]" so no box
ever opens onto thousands of items. Everything here is plain Python + numpy, no Qt.
"""
from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from fixport.core.panes.layout_constants import (
    DEFAULT_VISIBLE_BUDGET,
    MAX_GROUP_CHILDREN,
)
from fixport.core.words.graph import Graph, Node
from fixport.core.words.vocabulary import SCOPE_SEPARATOR, scope_from_onnx_name

ROOT = ""  # path of the root group: always expanded, never drawn as a box
SEPARATOR = SCOPE_SEPARATOR  # group paths are scopes


def scope_of(node: Node) -> str:
    """The node's module path; for ONNX nodes without a scope, derived from '/a/b/Op' names."""
    if node.scope:
        return node.scope.strip(SEPARATOR)
    return scope_from_onnx_name(node.name)


def _join(parent: str, label: str) -> str:
    return f"{parent}{SEPARATOR}{label}" if parent else label


@dataclass
class Group:
    """One collapsible group. ``path`` is its id; ancestry follows ``parent``, not the string."""

    path: str
    label: str
    parent: str | None
    index: int  # position in GroupTree.paths (parents come before their children)
    depth: int
    child_groups: list[str] = field(default_factory=list)
    node_indices: list[int] = field(default_factory=list)  # direct nodes, indices into graph.nodes
    node_count: int = 0  # all nodes below this group

    @property
    def direct_children(self) -> int:
        return len(self.child_groups) + len(self.node_indices)


class _RawScopes:
    """Scope strings -> nested raw groups, before merging, dropping and chunking."""

    def __init__(self, graph: Graph) -> None:
        self.nodes: dict[str, list[int]] = {ROOT: []}
        self.children: dict[str, list[str]] = {ROOT: []}
        self.first: dict[str, int] = {ROOT: 0}
        for index, node in enumerate(graph.nodes):
            scope = scope_of(node)
            bucket = self.nodes.get(scope)
            if bucket is None:
                self._add_scope(scope, index)
                bucket = self.nodes[scope]
            bucket.append(index)
        self.total: dict[str, int] = {}
        for path in reversed(list(self.children)):  # children were added after their parents
            self.total[path] = len(self.nodes[path]) + sum(self.total[c] for c in self.children[path])

    def _add_scope(self, scope: str, first_index: int) -> None:
        missing: list[str] = []
        path = scope
        while path not in self.children:  # walk up to the nearest known ancestor
            missing.append(path)
            cut = path.rfind(SEPARATOR)
            path = path[:cut] if cut >= 0 else ROOT
        parent = path
        for path in reversed(missing):
            self.children[path] = []
            self.nodes[path] = []
            self.first[path] = first_index
            self.children[parent].append(path)
            parent = path

    def only_node(self, path: str) -> int:
        """The single node below a group whose total is 1."""
        while not self.nodes[path]:
            path = self.children[path][0]
        return self.nodes[path][0]


class GroupTree:
    """Group path -> :class:`Group`, plus numpy indexes used to compute visible items fast."""

    def __init__(self, graph: Graph) -> None:
        self.groups: dict[str, Group] = {}
        self.paths: list[str] = []
        raw = _RawScopes(graph)
        self._add_group(raw, ROOT, ROOT, None, 0)
        node_group = np.zeros(len(graph.nodes), dtype=np.int32)
        for group in self.groups.values():
            node_group[group.node_indices] = group.index
        self.node_group = node_group  # graph node index -> innermost group index
        self.group_parent = np.array(
            [-1 if g.parent is None else self.groups[g.parent].index for g in self._ordered()], dtype=np.int32)
        self.node_ids = [node.id for node in graph.nodes]  # no reference to the graph: it is cached
        self.node_index = {node_id: index for index, node_id in enumerate(self.node_ids)}
        self._build_edges(graph)

    # --- construction ----------------------------------------------------------------------
    def _ordered(self) -> list[Group]:
        return [self.groups[path] for path in self.paths]

    def _new_group(self, path: str, label: str, parent: str | None) -> Group:
        depth = 0 if parent is None else self.groups[parent].depth + 1
        group = Group(path, label, parent, len(self.paths), depth)
        self.groups[path] = group
        self.paths.append(path)
        return group

    def _add_group(self, raw: _RawScopes, raw_path: str, path: str, parent: str | None, label_start: int) -> None:
        # Merge chains "encoder" -> "encoder/layer" into one group labelled "encoder/layer".
        while parent is not None and not raw.nodes[raw_path] and len(raw.children[raw_path]) == 1:
            raw_path = raw.children[raw_path][0]
            path = raw_path
        label = path[label_start:] if parent is not None else ""
        group = self._new_group(path, label, parent)
        group.node_count = raw.total[raw_path]
        items: list[tuple[int, str | None, int]] = [(i, None, i) for i in raw.nodes[raw_path]]
        for child in raw.children[raw_path]:
            if raw.total[child] == 1:
                only = raw.only_node(child)
                items.append((only, None, only))
            else:
                items.append((raw.first[child], child, -1))
        items.sort(key=lambda item: item[0])
        self._fill(raw, group, items, raw_path)

    def _fill(self, raw: _RawScopes, group: Group, items: list[tuple[int, str | None, int]], raw_path: str) -> None:
        """Attach items to ``group``, splitting into chunk groups when there are too many."""
        if len(items) > MAX_GROUP_CHILDREN:
            base = group.label or raw_path.rsplit(SEPARATOR, 1)[-1]
            chunk_size = MAX_GROUP_CHILDREN
            while len(items) > chunk_size * MAX_GROUP_CHILDREN:  # keep the chunk count itself bounded
                chunk_size *= MAX_GROUP_CHILDREN
            for start in range(0, len(items), chunk_size):
                chunk_items = items[start:start + chunk_size]
                label = f"{base}[{start}..{start + len(chunk_items) - 1}]"
                chunk = self._new_group(_join(group.path, label), label, group.path)
                group.child_groups.append(chunk.path)
                self._fill(raw, chunk, chunk_items, raw_path)
                chunk.node_count = sum(1 if child is None else raw.total[child] for _, child, _ in chunk_items)
            return
        for _, child, node_index in items:
            if child is None:
                group.node_indices.append(node_index)
            else:
                group.child_groups.append(self._child_path(raw, child))
                self._add_group(raw, child, child, group.path, len(raw_path) + 1 if raw_path else 0)

    def _child_path(self, raw: _RawScopes, child: str) -> str:
        while not raw.nodes[child] and len(raw.children[child]) == 1:
            child = raw.children[child][0]
        return child

    def _build_edges(self, graph: Graph) -> None:
        producer: dict[str, int] = {}
        for index, node in enumerate(graph.nodes):
            for name in node.outputs:
                if name:
                    producer[name] = index
        sources: list[int] = []
        targets: list[int] = []
        values: list[str] = []
        for index, node in enumerate(graph.nodes):
            for name in node.inputs:
                source = producer.get(name)
                if source is not None:
                    sources.append(source)
                    targets.append(index)
                    values.append(name)
        self.edge_src = np.asarray(sources, dtype=np.int32)
        self.edge_dst = np.asarray(targets, dtype=np.int32)
        self.edge_value = values

    # --- queries ---------------------------------------------------------------------------
    def ancestors(self, path: str) -> list[str]:
        """Group paths from the root's child down to ``path`` itself (root excluded)."""
        chain: list[str] = []
        current: str | None = path
        while current is not None and current != ROOT:
            chain.append(current)
            current = self.groups[current].parent
        return chain[::-1]

    def group_of_node(self, node_id: str) -> str:
        return self.paths[int(self.node_group[self.node_index[node_id]])]

    def groups_to_show(self, node_ids: Iterable[str]) -> set[str]:
        """Every group that must be expanded for these nodes to be visible."""
        needed: set[str] = set()
        for node_id in node_ids:
            if node_id in self.node_index:
                needed.update(self.ancestors(self.group_of_node(node_id)))
        return needed

    def all_groups(self) -> frozenset[str]:
        return frozenset(self.paths)


@dataclass
class VisibleItems:
    """Items (nodes and collapsed group boxes) in first-appearance order, edges aggregated."""

    keys: list[str]  # node id, or group path for a collapsed group
    is_group: np.ndarray  # bool per item
    ref: np.ndarray  # int32: graph node index, or group index for groups
    node_item: np.ndarray  # int32: graph node index -> the item showing it
    edge_src: np.ndarray  # int32 item indices
    edge_dst: np.ndarray
    edge_count: np.ndarray  # int32: how many graph edges each drawn edge stands for
    edge_value: list[str]  # one value name per drawn edge (the first one)

    def __len__(self) -> int:
        return len(self.keys)


def visible_items(tree: GroupTree, expanded: frozenset[str]) -> VisibleItems:
    """Nodes whose groups are all expanded, the outermost collapsed groups, and edges between them."""
    group_count = len(tree.paths)
    owner = np.full(group_count, -1, dtype=np.int32)  # outermost collapsed group at or above
    parent = tree.group_parent
    for index in range(1, group_count):  # parents come first; index 0 is the root
        above = owner[parent[index]]
        if above >= 0:
            owner[index] = above
        elif tree.paths[index] not in expanded:
            owner[index] = index
    node_total = len(tree.node_group)
    node_owner = owner[tree.node_group]
    keys_raw = np.where(node_owner >= 0, node_total + node_owner, np.arange(node_total, dtype=np.int32))
    unique_keys, first, inverse = np.unique(keys_raw, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    position = np.empty(len(order), dtype=np.int32)
    position[order] = np.arange(len(order), dtype=np.int32)
    node_item = position[inverse.reshape(-1)].astype(np.int32)
    item_keys = unique_keys[order]
    is_group = item_keys >= node_total
    ref = np.where(is_group, item_keys - node_total, item_keys).astype(np.int32)
    node_ids = tree.node_ids
    keys = [tree.paths[r] if g else node_ids[r] for r, g in zip(ref.tolist(), is_group.tolist())]

    src = node_item[tree.edge_src]
    dst = node_item[tree.edge_dst]
    keep = np.flatnonzero(src != dst)
    pair = src[keep].astype(np.int64) * max(len(keys), 1) + dst[keep]
    _pairs, first_edge, counts = np.unique(pair, return_index=True, return_counts=True)
    rows = keep[first_edge]
    return VisibleItems(
        keys=keys, is_group=is_group, ref=ref, node_item=node_item,
        edge_src=src[rows].astype(np.int32), edge_dst=dst[rows].astype(np.int32),
        edge_count=counts.astype(np.int32), edge_value=[tree.edge_value[r] for r in rows.tolist()],
    )


def default_expanded(graph: Graph, tree: GroupTree | None = None,
                     budget: int = DEFAULT_VISIBLE_BUDGET) -> frozenset[str]:
    """Big graphs open collapsed: open groups breadth-first while the item count stays in budget."""
    tree = tree or tree_for(graph)
    expanded: set[str] = set()
    visible = tree.groups[ROOT].direct_children
    queue = list(tree.groups[ROOT].child_groups)
    for path in queue:  # grows while we go: breadth-first over opened groups only
        growth = tree.groups[path].direct_children - 1
        if visible + growth <= budget:
            expanded.add(path)
            visible += growth
            queue.extend(tree.groups[path].child_groups)
    return frozenset(expanded)


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = True


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during allocation-heavy builds (they create no cycles).

    With a 50k-node graph alive, every full collection walks millions of objects; letting it run
    during a tree build or layout doubles their cost. Pauses nest across threads.
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
        _gc_pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


# --- per-graph cache -------------------------------------------------------------------------
_tree_lock = threading.Lock()
_trees: dict[int, tuple[weakref.ref[Graph], int, GroupTree]] = {}


def graph_version(graph: Graph) -> int:
    """Changes when a graph object is rebuilt in place (node count, or an explicit ``version``)."""
    return hash((len(graph.nodes), getattr(graph, "version", 0)))


def tree_for(graph: Graph) -> GroupTree:
    """The group tree of ``graph``, built once per graph object and version."""
    key = id(graph)
    version = graph_version(graph)
    with _tree_lock:
        entry = _trees.get(key)
        if entry is not None and entry[0]() is graph and entry[1] == version:
            return entry[2]
    with gc_paused():
        tree = GroupTree(graph)
    with _tree_lock:
        _trees[key] = (weakref.ref(graph, lambda _ref, key=key: _trees.pop(key, None)), version, tree)
    return tree
