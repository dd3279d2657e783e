"""Colours of graph panes: op categories, marks, the error colormap, in one place."""
from __future__ import annotations

from PySide6.QtGui import QBrush, QColor

# --- look -----------------------------------------------------------------------------------
BACKGROUND = "#f6f7f9"
EDGE_COLOR = "#9aa3b2"
EDGE_WIDTH_PX = 1.0
MULTI_EDGE_WIDTH_PX = 2.0  # an edge standing for several tensors
TEXT_COLOR = "#1f2937"
SUBTEXT_COLOR = "#6b7280"
SHADOW_COLOR = QColor(15, 23, 42, 28)
GROUP_FILL, GROUP_BORDER = "#eef2ff", "#6366f1"
UNSUPPORTED_FILL, UNSUPPORTED_BORDER, UNSUPPORTED_TEXT = "#dc2626", "#7f1d1d", "#ffffff"
BADGE_FILL, BADGE_BORDER, BADGE_TEXT = "#facc15", "#713f12", "#111827"
SELECTED_COLOR = "#2563eb"
HIGHLIGHT_COLOR = "#f59e0b"
DIVERGENT_COLOR = "#db2777"
# op category -> (fill, border); Model Explorer / Netron style pastel fills
CATEGORY_COLORS: dict[str, tuple[str, str]] = {
    "compute": ("#dbeafe", "#3b82f6"),
    "norm": ("#dcfce7", "#22c55e"),
    "activation": ("#fef3c7", "#f59e0b"),
    "pool": ("#e0e7ff", "#6366f1"),
    "math": ("#ede9fe", "#8b5cf6"),
    "shape": ("#f1f5f9", "#94a3b8"),
    "constant": ("#fafafa", "#d4d4d8"),
    "control": ("#cffafe", "#06b6d4"),
    "io": ("#1f2937", "#111827"),  # graph inputs and outputs: dark, like Netron's
    "other": ("#ffffff", "#64748b"),
}
_CATEGORY_OPS: dict[str, set[str]] = {
    "compute": {"conv", "convtranspose", "_convolution", "conv2d", "conv1d", "conv3d", "matmul", "gemm", "linear",
                "addmm", "bmm", "mm", "einsum", "deformconv", "deform_conv2d", "attention", "lstm", "gru", "rnn"},
    "norm": {"batchnormalization", "batch_norm", "layernormalization", "layer_norm", "instancenormalization",
             "instance_norm", "group_norm", "groupnormalization", "dropout"},
    "activation": {"relu", "relu_", "gelu", "sigmoid", "tanh", "softmax", "log_softmax", "logsoftmax", "erf",
                   "leakyrelu", "elu", "selu", "hardswish", "silu", "mish", "softplus", "threshold", "clip",
                   "hardtanh", "prelu"},
    "pool": {"maxpool", "averagepool", "globalaveragepool", "max_pool2d", "adaptive_avg_pool2d", "avg_pool2d",
             "globalmaxpool", "reducemean", "mean"},
    "math": {"add", "add_", "sub", "mul", "div", "pow", "sqrt", "exp", "log", "neg", "abs", "reciprocal",
             "where", "greater", "less", "equal", "not", "and", "or", "max", "min", "sum", "asinh", "rsub"},
    "shape": {"reshape", "view", "transpose", "permute", "flatten", "concat", "cat", "slice", "gather", "unsqueeze",
              "squeeze", "shape", "size", "expand", "tile", "split", "contiguous", "numtotensor", "int",
              "listconstruct", "listunpack", "tupleconstruct", "tupleunpack", "cast", "to", "constantofshape",
              "range", "select", "index", "t"},
    "constant": {"constant"},
    "control": {"if", "loop", "pythonop", "getattr", "callmethod", "scan"},
    "io": {"input", "output"},
}
_OP_CATEGORY = {op: category for category, ops in _CATEGORY_OPS.items() for op in ops}
# error colormap, 0 = within tolerance (pale green), 1 = 100x the tolerance or worse (deep red)
ERROR_STOPS = ("#e8f5e9", "#fff59d", "#ffb74d", "#f4511e", "#b71c1c")
ERROR_BINS = 32
DARK_FILL_LUMA = 0.55  # fills darker than this get white text

def op_category(kind: str) -> str:
    op = kind.split("::", 1)[-1].split("[", 1)[0].lower()
    return _OP_CATEGORY.get(op, "other")


def error_color(value: float) -> QColor:
    """Colour for a normalised error in [0, 1]: pale green (fine) through amber to red (worst)."""
    value = min(max(value, 0.0), 1.0) * (len(ERROR_STOPS) - 1)
    low = int(value)
    high = min(low + 1, len(ERROR_STOPS) - 1)
    a, b, t = QColor(ERROR_STOPS[low]), QColor(ERROR_STOPS[high]), value - low
    return QColor.fromRgbF(a.redF() + (b.redF() - a.redF()) * t, a.greenF() + (b.greenF() - a.greenF()) * t,
                           a.blueF() + (b.blueF() - a.blueF()) * t)


class Palette:
    """Fill index -> brush and border pen: categories, group, unsupported, then error bins."""

    def __init__(self) -> None:
        self.categories = list(CATEGORY_COLORS)
        fills = [QColor(fill) for fill, _ in CATEGORY_COLORS.values()]
        borders = [QColor(border) for _, border in CATEGORY_COLORS.values()]
        self.group = len(fills)
        fills.append(QColor(GROUP_FILL))
        borders.append(QColor(GROUP_BORDER))
        self.unsupported = len(fills)
        fills.append(QColor(UNSUPPORTED_FILL))
        borders.append(QColor(UNSUPPORTED_BORDER))
        self.error_base = len(fills)
        for index in range(ERROR_BINS):
            color = error_color(index / (ERROR_BINS - 1))
            fills.append(color)
            borders.append(color.darker(150))
        self.brushes = [QBrush(color) for color in fills]
        self.borders = borders
        self.dark_text = [0.299 * c.redF() + 0.587 * c.greenF() + 0.114 * c.blueF() < DARK_FILL_LUMA for c in fills]

# Compare dock and plots: verdict colours, and the floor for errors drawn on a log scale.
PASS_COLOUR = "#2e7d32"
FAIL_COLOUR = "#c62828"
WARN_COLOUR = "#ef6c00"  # worth a look, not a failure (CPU fallback, a problem no template fixes)
ERROR_FLOOR = 1e-30
