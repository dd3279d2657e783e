"""Every private torch name the torch.export tools touch,
the package's seam with torch (see ``core/exporters/__init__.py``)."""
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
