"""Named sizes and limits for grouping, layout and drawing of graph panes (one place, no Qt).

Scene units are "pixels at zoom 1.0". Drawing colours live in ``gui/graph_scene.py``.
"""
from __future__ import annotations

# --- grouping -------------------------------------------------------------------------------
MAX_GROUP_CHILDREN = 1000  # a group with more direct children is split into chunks of this size
DEFAULT_VISIBLE_BUDGET = 300  # big graphs open collapsed: expand levels only while under this

# --- node boxes -----------------------------------------------------------------------------
NODE_HEIGHT = 36.0
NODE_MIN_WIDTH = 64.0
NODE_MAX_WIDTH = 220.0
NODE_PADDING_X = 12.0  # left + right padding is twice this
TITLE_CHAR_WIDTH = 7.2  # approximate advance of the bold 11 px title font
SUBTITLE_CHAR_WIDTH = 6.0  # approximate advance of the 9 px subtitle font
MAX_LABEL_CHARS = 28  # longer labels are elided with "…"
GROUP_HEIGHT = 52.0
GROUP_MIN_WIDTH = 120.0
GROUP_MAX_WIDTH = 280.0
DUMMY_WIDTH = 8.0  # width reserved for an edge passing through a rank

# --- spacing --------------------------------------------------------------------------------
RANK_GAP = 44.0  # vertical space between ranks
NODE_GAP = 24.0  # horizontal space between neighbours in a rank
EDGE_GAP = 8.0  # horizontal space next to an edge passing through a rank

# --- algorithm switches ---------------------------------------------------------------------
DUMMY_NODE_LIMIT = 6000  # insert dummy nodes for long edges only while items + dummies <= this
SMALL_GRAPH_ORDER_SWEEPS = 8  # barycentre passes (alternating down/up) for small graphs
LARGE_GRAPH_ORDER_SWEEPS = 2
SMALL_GRAPH_LIMIT = 3000  # items (incl. dummies) up to which a graph counts as small
POSITION_ITERATIONS_SMALL = 12  # x refinement passes (align with neighbours, keep spacing)
POSITION_ITERATIONS_LARGE = 3
SMOOTH_EDGE_LIMIT = 4000  # curve edges (sampled cubic Béziers) only up to this many edges
BEZIER_SAMPLES = 8  # points per curved segment
ARROW_LENGTH = 7.0
ARROW_HALF_WIDTH = 3.5
CANCEL_POLL_EVERY = 16384  # loop iterations between cancel checks

# --- cache ----------------------------------------------------------------------------------
LAYOUT_CACHE_ENTRIES = 24
