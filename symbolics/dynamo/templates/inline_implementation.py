"""Decompose the op into the torch ops it is made of, then export those.

For a ``torch.library.custom_op``: its own Python implementation; for an aten op: torch's
decomposition (``torch._decomp.decomposition_table``), else Fixport's own (small static linear
algebra, scans, special functions: ``symbolics/synthesis/extra_*.py``). Registered as
``ep.run_decompositions({op: symbolic})``, so the captured graph holds aten ops torch_lib knows.
Schema: the op's own.
"""

import torch
from torch._decomp import decomposition_table
from torch._library.custom_ops import OPDEFS

from fixport.symbolics.synthesis.extra_linalg import LINALG_DECOMPOSITIONS
from fixport.symbolics.synthesis.extra_scans import SCAN_DECOMPOSITIONS
from fixport.symbolics.synthesis.extra_special import SPECIAL_DECOMPOSITIONS

TEMPLATE = {
    "id": "dynamo.inline_implementation",
    "title": "Inline the op's implementation (decomposition)",
    "description": "Replace the op by its Python implementation (custom op) or a decomposition (aten: torch's, "
                   "else Fixport's).",
    "family": "dynamo_decomposition",
    "fits": ["*"],
    "min_opset": 18,
    "max_opset": None,
    "params": {
        "kind": {"type": "str", "default": "", "label": "Op (namespace::name.overload)"},
    },
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Works when the implementation is plain torch ops (no numpy, no .item()).",
}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


def implementation(kind):
    """The Python function that computes ``kind`` in torch ops."""
    namespace, _, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    custom = OPDEFS.get(f"{namespace}::{name}")
    if custom is not None:
        return custom._init_fn
    target = getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")
    if target in decomposition_table:
        return decomposition_table[target]
    for table in (LINALG_DECOMPOSITIONS, SCAN_DECOMPOSITIONS, SPECIAL_DECOMPOSITIONS):
        if target in table:
            return table[target]
    raise NotImplementedError(f"neither torch nor Fixport has a decomposition of {kind}")


def symbolic(*args, **kwargs):
    return implementation(params["kind"])(*args, **kwargs)
