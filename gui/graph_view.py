"""GraphPane: a zoomable, searchable view of one graph with collapsible groups.

Layouts are computed by ``fixport.core.panes.layout`` on a worker thread (one runner, a new request cancels the
stale one, results return on the GUI thread) and drawn by one batched
:class:`fixport.gui.graph_scene.GraphItem`. Programmatic calls (``select_nodes``, ``set_marks``) never emit
``selection_changed``, so two synchronised panes cannot ping-pong.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, QPointF, QRectF, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import (
    QColor,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QShortcut,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from fixport.core.panes.grouping import GroupTree, default_expanded, tree_for
from fixport.core.panes.layout import LAYOUT_CACHE, Layout
from fixport.core.words.cancel import CancelCallback, Cancelled
from fixport.core.words.graph import Graph
from fixport.gui.first_paint import report_first_paint
from fixport.gui.graph_scene import GraphItem
from fixport.gui.graph_style import BACKGROUND
from fixport.gui.latest import LatestRequests

ZOOM_STEP_PER_DEGREE = 1.0018  # wheel: zoom factor per 1/8 degree of rotation
MIN_ZOOM, MAX_ZOOM = 0.002, 4.0
FIT_MAX_ZOOM = 1.0  # fitting never magnifies small graphs beyond 1:1
READABLE_ZOOM = 0.8  # a graph too big to fit readably opens at this zoom, top centre
FIT_MARGIN = 24.0
SCENE_MARGIN = 800.0  # room to pan beyond the graph
CLICK_SLOP_PX = 4  # a press and release closer than this is a click, not a drag
HIT_TOLERANCE_PX = 5.0  # hover distance to an edge for its tooltip
CENTER_ZOOM = 0.9  # zoom used when centring on a found/selected node that was too small
INLINE_LAYOUT_MAX_NODES = 1500  # laid out on the UI thread: under ~15 ms even fully expanded


class _LayoutSignals(QObject):
    finished = Signal(int, object)  # request id, Layout
    failed = Signal(int, str)
    progress = Signal(int, float, str)


class _LayoutJob(QRunnable):
    """Runs compute_layout (through the cache) for one request; quiet when cancelled."""

    def __init__(self, request: int, graph: Graph, expanded: frozenset[str] | None,
                 cancelled: CancelCallback, signals: _LayoutSignals) -> None:
        super().__init__()
        self.request, self.graph, self.expanded = request, graph, expanded
        self.cancelled, self.signals = cancelled, signals

    def run(self) -> None:
        try:
            expanded = self.expanded if self.expanded is not None else default_expanded(self.graph)
            layout = LAYOUT_CACHE.layout(
                self.graph, expanded, cancelled=self.cancelled,
                progress=lambda fraction, message: self.signals.progress.emit(self.request, fraction, message))
        except Cancelled:
            return
        except Exception as error:  # reported in the pane, never lost in a thread
            self.signals.failed.emit(self.request, f"{type(error).__name__}: {error}")
            return
        import pyqtgraph.functions  # noqa: F401  (the first paint needs it: load it here, off the UI thread)

        self.signals.finished.emit(self.request, layout)


class GraphView(QGraphicsView):
    """Pan by drag, zoom around the cursor; reports clicks and hovers to the pane."""

    item_clicked = Signal(object, bool)  # item index or None, additive (Ctrl held)
    item_double_clicked = Signal(int)
    context_requested = Signal(object, object)  # item index or None, global QPoint
    resized = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.scene().setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.setBackgroundBrush(QColor(BACKGROUND))
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlags(QGraphicsView.OptimizationFlag.DontSavePainterState
                                  | QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        self.graph_item: GraphItem | None = None
        self._press_pos = None
        self.keeps_fit = False  # the view was fitted by Fixport and not moved since: refit on resize

    def zoom(self) -> float:
        return self.transform().m11()

    def zoom_by(self, factor: float) -> None:
        factor = min(max(self.zoom() * factor, MIN_ZOOM), MAX_ZOOM) / self.zoom()
        self.scale(factor, factor)

    def wheelEvent(self, event: QWheelEvent) -> None:
        self.keeps_fit = False
        self.zoom_by(ZOOM_STEP_PER_DEGREE ** event.angleDelta().y())
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.keeps_fit = False
        self._press_pos = event.position()
        super().mousePressEvent(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.resized.emit()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        press, self._press_pos = self._press_pos, None
        if press is None or event.button() != Qt.MouseButton.LeftButton:
            return
        if (event.position() - press).manhattanLength() <= CLICK_SLOP_PX:
            additive = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            self.item_clicked.emit(self.item_at_view(event.position()), additive)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        item = self.item_at_view(event.position())
        if item is not None:
            self.item_double_clicked.emit(item)
        event.accept()

    def contextMenuEvent(self, event) -> None:
        self.context_requested.emit(self.item_at_view(QPointF(event.pos())), event.globalPos())

    def item_at_view(self, position: QPointF) -> int | None:
        if self.graph_item is None:
            return None
        return self.graph_item.item_at(self.mapToScene(position.toPoint()))

    def tooltip_at_view(self, position: QPointF) -> str:
        if self.graph_item is None:
            return ""
        return self.graph_item.tooltip_at(self.mapToScene(position.toPoint()), HIT_TOLERANCE_PX / self.zoom())

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:
        super().drawForeground(painter, rect)
        item = self.graph_item
        if item is not None and item.graph.nodes:
            report_first_paint(self.objectName() or "graph", item.graph.kind)

    def viewportEvent(self, event) -> bool:
        if event.type() == event.Type.ToolTip:
            text = self.tooltip_at_view(QPointF(event.pos()))
            if text:
                QToolTip.showText(event.globalPos(), text, self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)


class GraphPane(QWidget):
    """One graph: set_graph / select_nodes / set_marks / expand & collapse / find / fit_view."""

    node_clicked = Signal(str)
    selection_changed = Signal(list)
    layout_applied = Signal()  # a new layout is on screen (tests and the bench wait for it)
    layout_failed = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, synchronous: bool = False) -> None:
        super().__init__(parent)
        self.synchronous = synchronous  # compute layouts inline (tests, bench)
        self.graph: Graph | None = None
        self.tree: GroupTree | None = None
        self.layout: Layout | None = None
        self.expanded: frozenset[str] = frozenset()
        self.selection: list[str] = []
        self._marks: dict = {}
        self._layouts = LatestRequests()  # only the newest layout request counts
        self._pending = False  # a worker layout is in flight
        self._after_layout: list[Callable[[], None]] = []
        self._keep_view: tuple | None = None
        self._fit_next = True  # a new graph (not a re-layout of this one) starts fitted
        self._find_hits: list[str] = []
        self._find_text = ""
        self._haystack: list[str] | None = None
        self._stats: dict[str, float] = {}
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _LayoutSignals(self)
        self._signals.finished.connect(self._on_layout_finished)
        self._signals.failed.connect(self._on_layout_failed)
        self._signals.progress.connect(self._on_layout_progress)
        self._build_ui()

    def _build_ui(self) -> None:
        self.view = GraphView(self)
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Find node (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self._on_search_submitted)
        self.status = QLabel(self)
        self.status.setStyleSheet("color: #6b7280;")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.status)
        for text, slot in (("Fit", self.fit_view), ("Expand all", self.expand_all),
                           ("Collapse all", self.collapse_all)):
            button = QToolButton(self)
            button.setText(text)
            button.setAutoRaise(True)
            button.clicked.connect(slot)
            bar.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        shortcut = QShortcut(QKeySequence(QKeySequence.StandardKey.Find), self)
        shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        shortcut.activated.connect(self.focus_search)
        self.view.item_clicked.connect(self._on_item_clicked)
        self.view.resized.connect(self._on_view_resized)
        self.view.item_double_clicked.connect(self._on_item_double_clicked)
        self.view.context_requested.connect(self._on_context_requested)

    # --- graph and layout ------------------------------------------------------------------
    def set_graph(self, graph: Graph, expanded: frozenset[str] | None = None, keep_view: bool = False) -> None:
        """Show ``graph``; the layout is computed off the UI thread. ``keep_view`` keeps the viewport."""
        self._start_graph(graph, expanded, keep_view, synchronous=self.synchronous)

    def clear(self) -> None:
        """Show nothing (no model open, or a model that could not be exported)."""
        self.set_graph_sync(Graph(kind="onnx"))

    def set_graph_sync(self, graph: Graph, expanded: frozenset[str] | None = None, keep_view: bool = False) -> None:
        """Like set_graph but lays out on the calling thread (tests, bench)."""
        self._start_graph(graph, expanded, keep_view, synchronous=True)

    def _start_graph(self, graph: Graph, expanded: frozenset[str] | None, keep_view: bool, synchronous: bool) -> None:
        if keep_view and expanded is None and self.graph is not None:
            expanded = self.expanded  # a re-export keeps what the user had opened
        self._fit_next = not keep_view
        self._keep_view = (self.view.transform(), self.view.mapToScene(self.view.viewport().rect().center())) \
            if keep_view and self.layout is not None else None
        self.graph, self.tree, self._haystack = graph, None, None
        self._after_layout.clear()
        self.selection = [node_id for node_id in self.selection if node_id in graph.node_by_id]
        self._request_layout(expanded, synchronous)

    def _request_layout(self, expanded: frozenset[str] | None, synchronous: bool | None = None,
                        then: Callable[[], None] | None = None) -> None:
        assert self.graph is not None
        serial = self._layouts.issue()
        if then is not None:
            self._after_layout.append(then)
        cached = LAYOUT_CACHE.get(self.graph, expanded) if expanded is not None else None
        inline = self.synchronous if synchronous is None else synchronous
        # A small graph lays out in a few ms: inline, it is on screen with the result that brought it,
        # without a thread hop that waits for the UI thread's other work (the GIL is shared).
        inline = inline or len(self.graph.nodes) <= INLINE_LAYOUT_MAX_NODES
        if cached is not None or inline:
            self._pending = False
            started = time.perf_counter()
            if cached is None:
                expanded = expanded if expanded is not None else default_expanded(self.graph)
                cached = LAYOUT_CACHE.layout(self.graph, expanded)
            self._stats["layout_s"] = time.perf_counter() - started
            self._apply_layout(cached)
            return
        self._pending = True
        self.status.setText("Laying out…")
        self._layout_started = time.perf_counter()
        cancelled = self._layouts.cancel_callback(serial)
        self._pool.start(_LayoutJob(serial, self.graph, expanded, cancelled, self._signals))

    def _on_layout_finished(self, request: int, layout: Layout) -> None:
        if not self._layouts.is_current(request):
            return
        self._stats["layout_s"] = time.perf_counter() - self._layout_started
        self._pending = False
        self._apply_layout(layout)

    def _on_layout_failed(self, request: int, message: str) -> None:
        if self._layouts.is_current(request):
            self.status.setText("Layout failed")
            self.layout_failed.emit(message)

    def _on_layout_progress(self, request: int, fraction: float, message: str) -> None:
        if self._layouts.is_current(request):
            self.status.setText(f"Laying out… {fraction:.0%}")

    def _apply_layout(self, layout: Layout) -> None:
        started = time.perf_counter()
        assert self.graph is not None
        first = self.layout is None or self.view.graph_item is None or self._fit_next
        self._fit_next = False
        previous_centre = None if first else self.view.mapToScene(self.view.viewport().rect().center())
        previous_item = None if first else self.layout
        self.tree = tree_for(self.graph)
        self.layout, self.expanded = layout, layout.expanded
        scene = self.view.scene()
        if self.view.graph_item is not None:
            scene.removeItem(self.view.graph_item)
        item = GraphItem(self.graph, self.tree, layout)
        self.view.graph_item = item
        scene.addItem(item)
        b = layout.bounds
        scene.setSceneRect(QRectF(b[0], b[1], b[2] - b[0], b[3] - b[1]).adjusted(
            -SCENE_MARGIN, -SCENE_MARGIN, SCENE_MARGIN, SCENE_MARGIN))
        self._push_marks()
        self._push_selection()
        if self._keep_view is not None:
            transform, centre = self._keep_view
            self.view.setTransform(transform)
            self.view.centerOn(centre)
            self._keep_view = None
        elif first:
            self.fit_view()
            self.view.keeps_fit = True  # the window may still be settling its dock sizes
        elif previous_centre is not None and previous_item is not None:
            self.view.centerOn(previous_centre)
        self.status.setText(f"{len(layout.items):,} items")
        self._stats["scene_s"] = time.perf_counter() - started
        pending, self._after_layout = self._after_layout, []
        for action in pending:
            action()
        self.layout_applied.emit()

    # --- groups ----------------------------------------------------------------------------
    def expand_group(self, path: str) -> None:
        if self.tree is not None and path in self.tree.groups and path not in self.expanded:
            self._request_layout(self.expanded | {path}, then=lambda: self._center_on_key(path))

    def collapse_group(self, path: str) -> None:
        if path in self.expanded:
            self._request_layout(self.expanded - {path}, then=lambda: self._center_on_key(path))

    def expand_all(self) -> None:
        if self.tree is not None:
            self._request_layout(self.tree.all_groups())

    def collapse_all(self) -> None:
        if self.graph is not None:
            self._request_layout(frozenset())

    # --- selection, marks, search ----------------------------------------------------------
    def select_nodes(self, ids: list[str], center: bool = True) -> None:
        """Select nodes (opening the groups that hide them); emits nothing."""
        if self.graph is None:
            return
        if self._pending:  # the graph is still being laid out: select once it is on screen
            self._after_layout.append(lambda: self.select_nodes(ids, center))
            return
        self.selection = [node_id for node_id in ids if node_id in self.graph.node_by_id]
        tree = self.tree or tree_for(self.graph)
        missing = tree.groups_to_show(self.selection) - self.expanded
        then = (lambda: self._center_on_key(self.selection[0])) if center and self.selection else None
        if missing:
            self._request_layout(self.expanded | missing, then=then)
            return
        self._push_selection()
        if then is not None:
            then()

    def select_upstream(self, node_id: str) -> None:
        """Select the node and everything that feeds it."""
        if self.graph is not None:
            self._select_related([node_id], self.graph.upstream_of(node_id))

    def select_downstream(self, node_id: str) -> None:
        """Select the node and everything it feeds."""
        if self.graph is not None:
            self._select_related([node_id], self.graph.downstream_of(node_id))

    def select_between(self, first: str, second: str) -> None:
        """Select every node on a path between the two (nothing new when neither reaches the other)."""
        if self.graph is not None:
            self._select_related([first, second], self.graph.nodes_between(first, second))

    def _select_related(self, anchors: list[str], related: set[str]) -> None:
        order = self.graph.topological_order
        self.select_nodes(anchors + [n for n in order if n in related and n not in anchors], center=False)
        self.selection_changed.emit(list(self.selection))

    def set_marks(self, unsupported: set[str] | None = None, errors: dict[str, float] | None = None,
                  first_divergent: str | None = None, highlighted: set[str] | None = None) -> None:
        """Replace all marks. Nodes flagged ``unsupported`` in the graph are always marked."""
        self._marks = {"unsupported": set(unsupported or ()), "errors": dict(errors or {}),
                       "first_divergent": first_divergent, "highlighted": set(highlighted or ())}
        self._push_marks()

    def _push_marks(self) -> None:
        item, graph = self.view.graph_item, self.graph
        if item is None or graph is None or item.graph is not graph or self.tree is None:
            return  # a new graph is still being laid out; _apply_layout pushes the marks
        index = self.tree.node_index
        marks = self._marks
        unsupported = [i for i, node in enumerate(graph.nodes) if node.unsupported]
        unsupported += [index[n] for n in marks.get("unsupported", ()) if n in index]
        errors = {index[n]: float(v) for n, v in marks.get("errors", {}).items() if n in index}
        divergent = index.get(marks.get("first_divergent") or "")
        highlighted = [index[n] for n in marks.get("highlighted", ()) if n in index]
        item.set_marks(np.asarray(unsupported, np.int64), errors, divergent, np.asarray(highlighted, np.int64))

    def _push_selection(self) -> None:
        item = self.view.graph_item
        if item is None or self.tree is None or item.graph is not self.graph:
            return
        index = self.tree.node_index
        item.set_selected_items([item.item_of_node(index[n]) for n in self.selection if n in index])

    def find(self, text: str) -> list[str]:
        """Ids of nodes whose name, kind or scope contains ``text``; selects and centres the first."""
        if self.graph is None or not text:
            return []
        if self._haystack is None:
            self._haystack = [f"{n.name}\n{n.kind}\n{n.scope}\n{n.id}".lower() for n in self.graph.nodes]
        needle = text.lower()
        nodes = self.graph.nodes
        hits = [nodes[i].id for i, hay in enumerate(self._haystack) if needle in hay]
        self._find_text, self._find_hits = text, hits
        if hits:
            self.select_nodes([hits[0]], center=True)
        self.status.setText(f"{len(hits):,} found" if hits else "no match")
        return hits

    def _on_search_submitted(self) -> None:
        text = self.search.text()
        if text != self._find_text or not self._find_hits:
            hits = self.find(text)
        else:  # Enter again: the next hit
            hits = self._find_hits
            position = (hits.index(self.selection[0]) + 1) % len(hits) if self.selection and \
                self.selection[0] in hits else 0
            self.select_nodes([hits[position]], center=True)
            self.status.setText(f"{position + 1} of {len(hits):,}")
        if hits:
            self.selection_changed.emit(list(self.selection))

    def focus_search(self) -> None:
        """Put the cursor in the search box (Ctrl+F)."""
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    # --- view ------------------------------------------------------------------------------
    def _on_view_resized(self) -> None:
        if self.view.keeps_fit:
            self.fit_view()

    def _opening_point(self) -> QPointF | None:
        """Where a graph too big to read whole opens: on its first flagged node, else on its first
        input (the mean of inputs laid out far apart falls on empty space)."""
        layout = self.layout
        assert layout is not None and self.graph is not None
        marked = self._marks.get("unsupported", set())
        for node in self.graph.nodes:
            if node.unsupported or node.id in marked:
                index = self._item_index(node.id)
                if index is not None:
                    return QPointF(float(layout.x[index]), float(layout.y[index]))
        return None

    def _inputs_centre_x(self) -> float:
        """Where the graph starts: its first input (else its first rank, which may hold weights and constants)."""
        layout = self.layout
        assert layout is not None
        inputs = [index for index, key in enumerate(layout.items.keys) if str(key).startswith("input:")]
        if inputs:
            return float(layout.x[inputs[0]])
        first_rank = layout.rank == 0
        return float(layout.x[first_rank].mean()) if first_rank.any() else (layout.bounds[0] + layout.bounds[2]) / 2

    def _item_index(self, key: str) -> int | None:
        """The laid-out item showing node ``key`` (its collapsed group's, if it is inside one)."""
        layout = self.layout
        assert layout is not None
        index = layout.index_of(key)
        if index is None and self.tree is not None and key in self.tree.node_index:
            index = int(layout.items.node_item[self.tree.node_index[key]])
        return index

    def fit_view(self) -> None:
        """Whole graph if it is readable that way, else the top of it at a readable zoom."""
        if self.layout is None:
            return
        left, top, right, bottom = self.layout.bounds
        port = self.view.viewport().rect()
        width, height = max(right - left, 1.0), max(bottom - top, 1.0)
        zoom = min((port.width() - 2 * FIT_MARGIN) / width, (port.height() - 2 * FIT_MARGIN) / height, FIT_MAX_ZOOM)
        zoom = max(zoom, MIN_ZOOM)
        if zoom < READABLE_ZOOM and len(self.layout.items) > 1:
            self.view.resetTransform()
            self.view.scale(READABLE_ZOOM, READABLE_ZOOM)
            problem = self._opening_point()
            if problem is not None:
                self.view.centerOn(problem)
                return
            visible_height = port.height() / READABLE_ZOOM
            centre_x = self._inputs_centre_x()
            visible_width = port.width() / READABLE_ZOOM
            # Room to centre the inputs even where they sit at the graph's edge (the view clamps to the scene).
            scene = self.view.scene()
            scene.setSceneRect(scene.sceneRect().united(
                QRectF(centre_x - visible_width / 2, top - FIT_MARGIN, visible_width, visible_height)))
            self.view.centerOn(QPointF(centre_x, top - FIT_MARGIN + visible_height / 2))
            return
        self.view.resetTransform()
        self.view.scale(zoom, zoom)
        self.view.centerOn(QPointF((left + right) / 2, (top + bottom) / 2))

    def _center_on_key(self, key: str) -> None:
        self.view.keeps_fit = False  # the user asked to look at a node
        layout = self.layout
        if layout is None:
            return
        index = self._item_index(key)
        if index is None:
            return
        if self.view.zoom() < READABLE_ZOOM:
            self.view.resetTransform()
            self.view.scale(CENTER_ZOOM, CENTER_ZOOM)
        self.view.centerOn(QPointF(float(layout.x[index]), float(layout.y[index])))

    def render_stats(self) -> dict[str, float]:
        """Timings of the last layout/scene build and paint, plus counts (for the bench)."""
        stats = dict(self._stats)
        if self.layout is not None:
            stats.update({f"layout_{k}_s": v for k, v in self.layout.timings.items()})
            stats["items"] = float(len(self.layout.items))
            stats["edges"] = float(len(self.layout.items.edge_src))
        if self.view.graph_item is not None:
            stats.update(self.view.graph_item.stats)
        return stats

    # --- interaction -----------------------------------------------------------------------
    def _on_item_clicked(self, index: int | None, additive: bool) -> None:
        layout = self.layout
        if layout is None:
            return
        if index is None or layout.items.is_group[index]:
            if index is None and self.selection and not additive:
                self.selection = []
                self._push_selection()
                self.selection_changed.emit([])
            return
        node_id = layout.items.keys[index]
        if additive:
            self.selection = [n for n in self.selection if n != node_id] + \
                ([] if node_id in self.selection else [node_id])
        else:
            self.selection = [node_id]
        self._push_selection()
        self.node_clicked.emit(node_id)
        self.selection_changed.emit(list(self.selection))

    def _on_item_double_clicked(self, index: int) -> None:
        layout = self.layout
        if layout is not None and layout.items.is_group[index]:
            self.expand_group(layout.items.keys[index])

    def _on_context_requested(self, index: int | None, global_pos) -> None:
        menu = self.context_menu(index)
        if menu is not None:
            menu.popup(global_pos)

    def context_menu(self, index: int | None) -> QMenu | None:
        """The right-click menu for item ``index`` (None: the background)."""
        if self.layout is None or self.tree is None:
            return None
        menu = QMenu(self)
        if index is not None:
            key = self.layout.items.keys[index]
            if self.layout.items.is_group[index]:
                menu.addAction(f"Expand {key}", lambda: self.expand_group(key))
                inner = {p for p in self.tree.all_groups() if key in self.tree.ancestors(p)}
                menu.addAction("Expand everything inside", lambda: self._request_layout(self.expanded | inner))
            for path in reversed(self.tree.ancestors(self.tree.group_of_node(key)) if key in self.tree.node_index
                                 else self.tree.ancestors(key)[:-1]):
                menu.addAction(f"Collapse {path}", lambda p=path: self.collapse_group(p))
            menu.addSeparator()
            if not self.layout.items.is_group[index]:
                menu.addAction("Select upstream", lambda: self.select_upstream(key))
                menu.addAction("Select downstream", lambda: self.select_downstream(key))
        if len(self.selection) == 2:
            first, second = self.selection
            menu.addAction("Select paths between the two selected", lambda: self.select_between(first, second))
        if menu.actions() and not menu.actions()[-1].isSeparator():
            menu.addSeparator()
        menu.addAction("Fit view", self.fit_view)
        menu.addAction("Expand all", self.expand_all)
        menu.addAction("Collapse all", self.collapse_all)
        return menu

    def shutdown(self) -> None:
        """Cancel a running layout and wait for the worker (called on close)."""
        self._layouts.supersede()
        self._pool.waitForDone(5000)

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)
