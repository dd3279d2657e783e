"""A TorchScript scope name as the module path it names (no torch): where Fixport's instance keys
and the fix script's start."""
from __future__ import annotations


def module_scope(scope_name: str) -> str:
    """'M::/Sequential::features/Block::features.1' -> 'features/1' (module path with '/').

    Scope segments carry either the attribute name or the full dotted path from the root,
    depending on the torch version; both give the same result.
    """
    path = ""
    for segment in scope_name.split("/"):
        attr = segment.rsplit("::", 1)[-1] if "::" in segment else ""
        if not attr:
            continue
        path = attr if not path or attr.startswith(path + ".") else f"{path}.{attr}"
    return "/".join(part for part in path.split(".") if part)
