"""One QGraphicsItem that draws a whole :class:`fixport.core.panes.layout.Layout` in batches.

No item per node or edge: each paint culls boxes and edge segments against the
exposed rect with numpy, draws edges with one ``drawLines`` call on a numpy-backed QLineF array,
node boxes with one ``drawRects`` per colour when zoomed out (rounded boxes, badges and labels
only when there are few enough on screen and they are big enough to read).
"""
from __future__ import annotations

import logging
import time

import numpy as np
import shiboken6
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from fixport.core.panes.grouping import GroupTree
from fixport.core.panes.layout import Layout
from fixport.core.panes.layout_constants import ARROW_LENGTH
from fixport.core.words.graph import Graph
from fixport.gui.graph_style import (
    BADGE_BORDER,
    BADGE_FILL,
    BADGE_TEXT,
    DIVERGENT_COLOR,
    EDGE_COLOR,
    EDGE_WIDTH_PX,
    ERROR_BINS,
    GROUP_BORDER,
    HIGHLIGHT_COLOR,
    MULTI_EDGE_WIDTH_PX,
    SELECTED_COLOR,
    SHADOW_COLOR,
    SUBTEXT_COLOR,
    TEXT_COLOR,
    UNSUPPORTED_BORDER,
    UNSUPPORTED_FILL,
    UNSUPPORTED_TEXT,
    Palette,
    op_category,
)

# --- level of detail (screen pixels) ---------------------------------------------------------
TINY_NODE_PX = 5.0  # node boxes shorter than this on screen: flat rects, no borders or labels
MIN_LABEL_PX = 5.5  # smallest font size on screen worth drawing
TITLE_FONT_PX = 11.0
SUBTITLE_FONT_PX = 9.0
DETAIL_LIMIT = 400  # at most this many boxes drawn one by one (rounded, shadow); else batches
LABEL_LIMIT = 700  # titles drawn only while at most this many boxes are on screen
ARROW_MIN_PX = 3.0
MARK_MIN_PX = 6.0  # marked nodes (unsupported, selected) are drawn at least this big on screen
CORNER_RADIUS = 6.0
GROUP_CORNER_RADIUS = 9.0
BADGE_RADIUS = 7.5
SELECTION_MARGIN = 3.5
DECIMATE_LIMIT = 6000  # more primitives than this: merge those landing on the same screen pixels
ANTIALIAS_LIMIT = 4000  # antialias edges only when at most this many segments are drawn


def _draw_rects(painter: QPainter, rects: np.ndarray) -> None:
    """drawRects straight from an (N, 4) float64 array (x, y, w, h): no QRectF per box."""
    rects = np.ascontiguousarray(rects, dtype=np.float64)
    if len(rects):
        painter.drawRects(shiboken6.wrapInstance(rects.ctypes.data, QRectF), len(rects))


def _draw_lines(painter: QPainter, lines: np.ndarray) -> None:
    lines = np.ascontiguousarray(lines, dtype=np.float64)
    if len(lines):
        painter.drawLines(shiboken6.wrapInstance(lines.ctypes.data, QLineF), len(lines))


class GraphItem(QGraphicsItem):
    """Draws one layout; marks and selection are arrays indexed by visible item."""

    def __init__(self, graph: Graph, tree: GroupTree, layout: Layout) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.graph, self.tree, self.layout = graph, tree, layout
        self.palette = Palette()
        left, top = layout.x - layout.width / 2, layout.y - layout.height / 2
        self.rects = np.column_stack([left, top, layout.width, layout.height])
        self.right, self.bottom = left + layout.width, top + layout.height
        segments = layout.segments
        self.seg_min_x = np.minimum(segments[:, 0], segments[:, 2])
        self.seg_max_x = np.maximum(segments[:, 0], segments[:, 2])
        self.seg_min_y = np.minimum(segments[:, 1], segments[:, 3])
        self.seg_max_y = np.maximum(segments[:, 1], segments[:, 3])
        self.seg_multi = layout.items.edge_count[layout.segment_edge] > 1
        self.base_fill = self._category_fills()
        self.fill = self.base_fill.copy()
        count = len(layout.items)
        self.unsupported = np.zeros(count, bool)
        self.selected = np.zeros(count, bool)
        self.highlighted = np.zeros(count, bool)
        self.divergent = -1
        self.title_font = QFont()
        self.title_font.setPixelSize(int(TITLE_FONT_PX))
        self.title_font.setBold(True)
        self.subtitle_font = QFont()
        self.subtitle_font.setPixelSize(int(SUBTITLE_FONT_PX))
        self.stats: dict[str, float] = {}
        b = layout.bounds
        self._bounds = QRectF(b[0], b[1], b[2] - b[0], b[3] - b[1]).adjusted(-40, -40, 40, 40)

    def _category_fills(self) -> np.ndarray:
        items, nodes = self.layout.items, self.graph.nodes
        index = {category: i for i, category in enumerate(self.palette.categories)}
        by_kind: dict[str, int] = {}
        fills = np.empty(len(items), dtype=np.int32)
        for i, (ref, is_group) in enumerate(zip(items.ref.tolist(), items.is_group.tolist())):
            if is_group:
                fills[i] = self.palette.group
                continue
            kind = nodes[ref].kind
            value = by_kind.get(kind)
            if value is None:
                value = by_kind[kind] = index[op_category(kind)]
            fills[i] = value
        return fills

    # --- marks -------------------------------------------------------------------------------
    def item_of_node(self, node_index: int) -> int:
        return int(self.layout.items.node_item[node_index])

    def set_marks(self, unsupported: np.ndarray, errors: dict[int, float], divergent: int | None,
                  highlighted: np.ndarray) -> None:
        """Arguments are graph node indices; marks of hidden nodes go to their group box."""
        node_item = self.layout.items.node_item
        self.unsupported[:] = False
        self.unsupported[node_item[unsupported]] = True
        self.fill = self.base_fill.copy()
        if errors:
            worst = np.full(len(self.fill), -1.0)
            np.maximum.at(worst, node_item[np.fromiter(errors, np.int64, len(errors))],
                          np.clip(np.fromiter(errors.values(), np.float64, len(errors)), 0.0, 1.0))
            has = worst >= 0
            self.fill[has] = self.palette.error_base + np.round(worst[has] * (ERROR_BINS - 1)).astype(np.int32)
        self.fill[self.unsupported] = self.palette.unsupported
        self.divergent = -1 if divergent is None else int(node_item[divergent])
        self.highlighted[:] = False
        self.highlighted[node_item[highlighted]] = True
        self.update()

    def set_selected_items(self, items: list[int]) -> None:
        self.selected[:] = False
        self.selected[items] = True
        self.update()

    # --- hit testing -------------------------------------------------------------------------
    def item_at(self, point: QPointF) -> int | None:
        x, y = point.x(), point.y()
        hits = np.flatnonzero((self.rects[:, 0] <= x) & (self.right >= x)
                              & (self.rects[:, 1] <= y) & (self.bottom >= y))
        return int(hits[-1]) if len(hits) else None

    def edge_at(self, point: QPointF, tolerance: float) -> int | None:
        """Index of the drawn edge nearest to ``point`` within ``tolerance`` scene units."""
        x, y = point.x(), point.y()
        near = np.flatnonzero((self.seg_min_x <= x + tolerance) & (self.seg_max_x >= x - tolerance)
                              & (self.seg_min_y <= y + tolerance) & (self.seg_max_y >= y - tolerance))
        if not len(near):
            return None
        seg = self.layout.segments[near]
        a, d = seg[:, :2], seg[:, 2:] - seg[:, :2]
        t = np.clip(((x - a[:, 0]) * d[:, 0] + (y - a[:, 1]) * d[:, 1]) / np.maximum((d * d).sum(1), 1e-12), 0, 1)
        distance = np.hypot(a[:, 0] + t * d[:, 0] - x, a[:, 1] + t * d[:, 1] - y)
        best = int(np.argmin(distance))
        return int(self.layout.segment_edge[near[best]]) if distance[best] <= tolerance else None

    def tooltip_at(self, point: QPointF, tolerance: float) -> str:
        """Node: kind, name, scope. Group: path and size. Edge: tensor name, dtype and shape."""
        item = self.item_at(point)
        if item is not None:
            return self.item_tooltip(item)
        edge = self.edge_at(point, tolerance)
        return "" if edge is None else self.edge_tooltip(edge)

    def item_tooltip(self, item: int) -> str:
        items = self.layout.items
        ref = int(items.ref[item])
        if items.is_group[item]:
            group = self.tree.groups[self.tree.paths[ref]]
            return f"group {group.path}\n{group.node_count:,} nodes — double-click to expand"
        node = self.graph.nodes[ref]
        lines = [node.kind, f"name: {node.name or node.id}", f"scope: {node.scope or '(top level)'}"]
        if node.unsupported:
            lines.append("unsupported")
        return "\n".join(lines)

    def edge_tooltip(self, edge: int) -> str:
        items = self.layout.items
        name = items.edge_value[edge]
        text = f"{name}: {self.graph.value(name).describe()}"
        extra = int(items.edge_count[edge]) - 1
        if extra:
            text += f"\n(+{extra} more tensor{'s' if extra > 1 else ''})"
        return f"{text}\n{items.keys[int(items.edge_src[edge])]} → {items.keys[int(items.edge_dst[edge])]}"

    # --- QGraphicsItem -----------------------------------------------------------------------
    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        # An exception escaping a Qt virtual override crashes PySide while it reports it:
        # a drawing bug must cost one frame, never the user's window.
        try:
            self._paint(painter, option)
        except Exception:
            logging.getLogger(__name__).exception("graph drawing failed")

    def _paint(self, painter: QPainter, option: QStyleOptionGraphicsItem) -> None:
        started = time.perf_counter()
        scale = option.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect
        x0, y0, x1, y1 = exposed.left(), exposed.top(), exposed.right(), exposed.bottom()
        visible = np.flatnonzero((self.right >= x0) & (self.rects[:, 0] <= x1)
                                 & (self.bottom >= y0) & (self.rects[:, 1] <= y1))
        segments = np.flatnonzero((self.seg_max_x >= x0) & (self.seg_min_x <= x1)
                                  & (self.seg_max_y >= y0) & (self.seg_min_y <= y1))
        self._paint_edges(painter, segments, scale, x0, y0, x1, y1)
        tiny = scale * float(self.layout.height.min() if len(self.layout.height) else 0) < TINY_NODE_PX
        if tiny or len(visible) > DETAIL_LIMIT:
            self._paint_boxes_batched(painter, visible, scale, tiny)
            if not tiny and len(visible) <= LABEL_LIMIT and scale * TITLE_FONT_PX >= MIN_LABEL_PX:
                painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
                for i in visible.tolist():
                    x, y, w, h = self.rects[i]
                    self._paint_label(painter, i, QRectF(x, y, w, h), int(self.fill[i]), False)
        else:
            self._paint_boxes_detailed(painter, visible, scale)
        self.stats = {"paint_s": time.perf_counter() - started, "boxes": float(len(visible)),
                      "segments": float(len(segments)), "scale": scale}

    def _paint_edges(self, painter: QPainter, segments: np.ndarray, scale: float,
                     x0: float, y0: float, x1: float, y1: float) -> None:
        smooth = len(segments) <= ANTIALIAS_LIMIT
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, smooth)
        for multi, width in ((False, EDGE_WIDTH_PX), (True, MULTI_EDGE_WIDTH_PX)):
            pen = QPen(QColor(EDGE_COLOR), width)
            pen.setCosmetic(True)
            painter.setPen(pen)
            if smooth:  # whole polylines: antialiased separate segments would show dots at joints
                chosen = segments[self.seg_multi[segments] == multi]
                if len(chosen):
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                    painter.drawPath(self._runs_path(chosen))
            else:
                lines = self.layout.segments[segments[self.seg_multi[segments] == multi]]
                if len(lines) > DECIMATE_LIMIT:
                    self._draw_decimated_lines(painter, lines)
                else:
                    _draw_lines(painter, lines)
        if scale * ARROW_LENGTH < ARROW_MIN_PX:
            return
        tips = self.layout.arrows[:, 0]
        edges = np.flatnonzero((tips[:, 0] >= x0) & (tips[:, 0] <= x1) & (tips[:, 1] >= y0) & (tips[:, 1] <= y1))
        if not len(edges):
            return
        triangles = self.layout.arrows[edges][:, [0, 1, 2, 0]]
        connect = np.tile(np.array([1, 1, 1, 0], dtype=np.int32), len(edges))
        from pyqtgraph.functions import arrayToQPath  # pyqtgraph costs a second of start-up: load it late

        path = arrayToQPath(triangles[..., 0].ravel(), triangles[..., 1].ravel(), connect=connect)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.fillPath(path, QColor(EDGE_COLOR))

    @staticmethod
    def _draw_decimated_lines(painter: QPainter, lines: np.ndarray) -> None:
        """Draw in device pixels, once per distinct pixel-rounded segment (zoomed-out views)."""
        t = painter.worldTransform()
        device = np.rint(lines * [t.m11(), t.m22(), t.m11(), t.m22()] + [t.dx(), t.dy(), t.dx(), t.dy()])
        packed = (np.clip(device, -32000, 32000).astype(np.int64) + 32768).astype(np.uint64)
        key = ((packed[:, 0] << np.uint64(48)) | (packed[:, 1] << np.uint64(32))
               | (packed[:, 2] << np.uint64(16)) | packed[:, 3])
        _, first = np.unique(key, return_index=True)
        painter.save()
        painter.resetTransform()
        _draw_lines(painter, device[first])
        painter.restore()

    def _runs_path(self, segments: np.ndarray) -> QPainterPath:
        """One path of the given (sorted) segments, consecutive pieces of an edge joined."""
        lines = self.layout.segments[segments]
        edge = self.layout.segment_edge[segments]
        new_run = np.ones(len(segments), dtype=bool)
        new_run[1:] = (segments[1:] != segments[:-1] + 1) | (edge[1:] != edge[:-1])
        end_position = np.cumsum(1 + new_run) - 1
        points = np.empty((int(end_position[-1]) + 1, 2))
        points[end_position] = lines[:, 2:]
        points[end_position[new_run] - 1] = lines[new_run, :2]
        connect = np.ones(len(points), dtype=np.int32)
        connect[end_position[np.r_[new_run[1:], True]]] = 0
        from pyqtgraph.functions import arrayToQPath  # pyqtgraph costs a second of start-up: load it late

        return arrayToQPath(points[:, 0], points[:, 1], connect=connect)

    def _paint_boxes_batched(self, painter: QPainter, visible: np.ndarray, scale: float, tiny: bool) -> None:
        if not len(visible):
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        fills = self.fill[visible]
        order = np.argsort(fills, kind="stable")
        fills_sorted = fills[order]
        starts = np.flatnonzero(np.r_[True, fills_sorted[1:] != fills_sorted[:-1]])
        ends = np.r_[starts[1:], len(order)]
        for start, end in zip(starts.tolist(), ends.tolist()):
            fill = int(fills_sorted[start])
            if tiny:
                painter.setPen(Qt.PenStyle.NoPen)
            else:
                pen = QPen(self.palette.borders[fill], 1.0)
                pen.setCosmetic(True)
                painter.setPen(pen)
            painter.setBrush(self.palette.brushes[fill])
            rects = self.rects[visible[order[start:end]]]
            if tiny and len(rects) > DECIMATE_LIMIT:
                self._draw_decimated_rects(painter, rects)
            else:
                _draw_rects(painter, rects)
        # Marks stay visible when zoomed out: at least MARK_MIN_PX on screen, outlined.
        self._paint_marks_enlarged(painter, visible, scale)

    @staticmethod
    def _draw_decimated_rects(painter: QPainter, rects: np.ndarray) -> None:
        """Tiny boxes in device pixels, once per distinct pixel position."""
        t = painter.worldTransform()
        device = np.column_stack([np.rint(rects[:, 0] * t.m11() + t.dx()), np.rint(rects[:, 1] * t.m22() + t.dy()),
                                  np.maximum(np.rint(rects[:, 2] * t.m11()), 1),
                                  np.maximum(np.rint(rects[:, 3] * t.m22()), 1)])
        packed = (np.clip(device[:, :2], -32000, 32000).astype(np.int64) + 32768)
        _, first = np.unique((packed[:, 0] << 16) | packed[:, 1], return_index=True)
        painter.save()
        painter.resetTransform()
        _draw_rects(painter, device[first])
        painter.restore()

    def _paint_marks_enlarged(self, painter: QPainter, visible: np.ndarray, scale: float) -> None:
        minimum = MARK_MIN_PX / max(scale, 1e-9)
        marks = (
            (self.unsupported, QColor(UNSUPPORTED_FILL), QColor(UNSUPPORTED_BORDER)),
            (self.highlighted, QColor(HIGHLIGHT_COLOR), QColor(HIGHLIGHT_COLOR)),
            (self.selected, QColor(SELECTED_COLOR), QColor(SELECTED_COLOR)),
        )
        for mask, fill, border in marks:
            shown = visible[mask[visible]]
            if not len(shown):
                continue
            centre_x = self.rects[shown, 0] + self.rects[shown, 2] / 2
            centre_y = self.rects[shown, 1] + self.rects[shown, 3] / 2
            w = np.maximum(self.rects[shown, 2], minimum)
            h = np.maximum(self.rects[shown, 3], minimum)
            pen = QPen(border, 2.0)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.setBrush(fill)
            _draw_rects(painter, np.column_stack([centre_x - w / 2, centre_y - h / 2, w, h]))
        if self.divergent >= 0 and self.divergent in set(visible.tolist()):
            pen = QPen(QColor(DIVERGENT_COLOR), 3.0)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            x, y, w, h = self.rects[self.divergent]
            grow = max(minimum - min(w, h), 0) / 2 + 2 / max(scale, 1e-9)
            painter.drawRect(QRectF(x - grow, y - grow, w + 2 * grow, h + 2 * grow))

    def _paint_boxes_detailed(self, painter: QPainter, visible: np.ndarray, scale: float) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        labels = scale * TITLE_FONT_PX >= MIN_LABEL_PX
        sublabels = scale * SUBTITLE_FONT_PX >= MIN_LABEL_PX
        is_group = self.layout.items.is_group
        palette = self.palette
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(SHADOW_COLOR)
        for i in visible.tolist():  # soft shadow first, so it never covers a neighbour
            x, y, w, h = self.rects[i]
            radius = GROUP_CORNER_RADIUS if is_group[i] else CORNER_RADIUS
            painter.drawRoundedRect(QRectF(x + 1.0, y + 2.0, w, h), radius, radius)
        for i in visible.tolist():
            x, y, w, h = self.rects[i]
            rect = QRectF(x, y, w, h)
            fill = int(self.fill[i])
            group = bool(is_group[i])
            pen = QPen(palette.borders[fill], 1.6 if group else 1.0)
            pen.setCosmetic(True)  # the cosmetic stroker is several times faster than a scaled one
            if group:
                pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.setBrush(palette.brushes[fill])
            radius = GROUP_CORNER_RADIUS if group else CORNER_RADIUS
            painter.drawRoundedRect(rect, radius, radius)
            if group and labels:
                self._paint_group_glyph(painter, rect)
            if labels:
                self._paint_label(painter, i, rect, fill, sublabels)
            if self.unsupported[i]:
                self._paint_badge(painter, rect)
        self._paint_outlines(painter, visible, scale)

    def _paint_label(self, painter: QPainter, index: int, rect: QRectF, fill: int, sublabels: bool) -> None:
        light = self.palette.dark_text[fill]
        painter.setPen(QColor(UNSUPPORTED_TEXT if light else TEXT_COLOR))
        painter.setFont(self.title_font)
        title_rect = QRectF(rect.x() + 4, rect.y() + 3, rect.width() - 8,
                            rect.height() / 2 if sublabels else rect.height() - 6)
        align = Qt.AlignmentFlag.AlignHCenter | (Qt.AlignmentFlag.AlignBottom if sublabels
                                                 else Qt.AlignmentFlag.AlignVCenter)
        painter.drawText(title_rect, align, self.layout.titles[index])
        if sublabels:
            painter.setPen(QColor(UNSUPPORTED_TEXT if light else SUBTEXT_COLOR))
            painter.setFont(self.subtitle_font)
            sub_rect = QRectF(rect.x() + 4, rect.center().y() + 3, rect.width() - 8, rect.height() / 2 - 6)
            painter.drawText(sub_rect, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                             self.layout.subtitles[index])

    def _paint_group_glyph(self, painter: QPainter, rect: QRectF) -> None:
        """A small '+' square at the right: this box opens."""
        size = 10.0
        box = QRectF(rect.right() - size - 7, rect.center().y() - size / 2, size, size)
        painter.setPen(QPen(QColor(GROUP_BORDER), 1.2))
        painter.setBrush(QColor("#ffffff"))
        painter.drawRoundedRect(box, 2, 2)
        c = box.center()
        painter.drawLine(QPointF(c.x() - 3, c.y()), QPointF(c.x() + 3, c.y()))
        painter.drawLine(QPointF(c.x(), c.y() - 3), QPointF(c.x(), c.y() + 3))

    def _paint_badge(self, painter: QPainter, rect: QRectF) -> None:
        """The '!' badge: unsupported is never told by colour alone."""
        centre = QPointF(rect.right() - 2, rect.top() + 2)
        painter.setPen(QPen(QColor(BADGE_BORDER), 1.2))
        painter.setBrush(QColor(BADGE_FILL))
        painter.drawEllipse(centre, BADGE_RADIUS, BADGE_RADIUS)
        painter.setPen(QColor(BADGE_TEXT))
        painter.setFont(self.title_font)
        painter.drawText(QRectF(centre.x() - BADGE_RADIUS, centre.y() - BADGE_RADIUS, 2 * BADGE_RADIUS,
                                2 * BADGE_RADIUS), Qt.AlignmentFlag.AlignCenter, "!")

    def _paint_outlines(self, painter: QPainter, visible: np.ndarray, scale: float) -> None:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        marks = ((self.highlighted, HIGHLIGHT_COLOR, 2.0), (self.selected, SELECTED_COLOR, 2.5))
        for mask, color, width in marks:
            painter.setPen(QPen(QColor(color), width))
            for i in visible[mask[visible]].tolist():
                x, y, w, h = self.rects[i]
                m = SELECTION_MARGIN
                painter.drawRoundedRect(QRectF(x - m, y - m, w + 2 * m, h + 2 * m),
                                        CORNER_RADIUS + m, CORNER_RADIUS + m)
        if self.divergent >= 0 and self.divergent in set(visible.tolist()):
            x, y, w, h = self.rects[self.divergent]
            m = SELECTION_MARGIN + 2.5
            painter.setPen(QPen(QColor(DIVERGENT_COLOR), 3.0))
            painter.drawRoundedRect(QRectF(x - m, y - m, w + 2 * m, h + 2 * m), CORNER_RADIUS + m, CORNER_RADIUS + m)
            if scale * SUBTITLE_FONT_PX >= MIN_LABEL_PX:
                tag = QRectF(x, y - m - 17, 104, 14)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(DIVERGENT_COLOR))
                painter.drawRoundedRect(tag, 7, 7)
                painter.setPen(QColor("#ffffff"))
                painter.setFont(self.subtitle_font)
                painter.drawText(tag, Qt.AlignmentFlag.AlignCenter, "first divergence")
