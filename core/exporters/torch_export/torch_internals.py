"""Every torch internal torch.export as a tool touches: the seam to check when torch moves.

torch.onnx keeps such a seam for itself (``torch/onnx/_internal/exporter/_compat.py``). Each name
here is used somewhere in this package; ``tests/test_torch_seams.py`` fails when a module of the
package reaches a private torch name that is not listed, or when a listed name no longer resolves
in the installed torch.
"""
from __future__ import annotations

TORCH_RANGE = ">=2.9,<2.15"  # pyproject.toml's pin; every name below resolves in the torch CI installs

# What for -> the torch names used for it.
TORCH_INTERNALS: dict[str, tuple[str, ...]] = {
    "torch.library custom ops and their Python implementations": (
        "torch._library.custom_ops.OPDEFS.get",
    ),
    "file names in torch.export's report": (
        "torch._logging.structured.INTERN_TABLE.items",
    ),
    "nested arguments, flattened the way torch.export flattens them": (
        "torch.utils._pytree.tree_flatten",
        "torch.utils._pytree.tree_leaves",
        "torch.utils._pytree.tree_unflatten",
    ),
}


def listed_names() -> set[str]:
    """Every torch name listed, whatever it is used for."""
    return {name for names in TORCH_INTERNALS.values() for name in names}
