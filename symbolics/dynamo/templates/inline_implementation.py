"""Decompose the op into the torch ops it is made of, then export those.

For a ``torch.library.custom_op``: its own Python implementation; for an aten op: Fixport's own
decomposition where it has one (small static linear algebra, scans, special functions:
``symbolics/synthesis/extra_*.py``), else torch's (``torch._decomp.decomposition_table``, else
the op's CompositeImplicitAutograd kernel). An
error check that returns nothing (``_linalg_check_errors``) decomposes into nothing: ONNX has no
errors to raise. ``kind`` names the op replaced: for a node torch.onnx made while decomposing
another op (``prims::lgamma`` from ``aten::lgamma``), that other op. Registered as
``ep.run_decompositions({op: symbolic})``, so the captured graph holds aten ops torch_lib knows.
Schema: the op's own.
"""

import functools

import torch
from torch._decomp import decomposition_table
from torch._library.custom_ops import OPDEFS

from fixport.symbolics.api import default_params, fix
from fixport.symbolics.synthesis.extra_linalg import LINALG_DECOMPOSITIONS
from fixport.symbolics.synthesis.extra_scans import SCAN_DECOMPOSITIONS
from fixport.symbolics.synthesis.extra_special import SPECIAL_DECOMPOSITIONS


def has_composite_kernel(target):
    """Whether torch writes ``target`` in other aten ops (a CompositeImplicitAutograd kernel)."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), torch._C.DispatchKey.CompositeImplicitAutograd)


def implementation(kind):
    """The Python function that computes ``kind`` in torch ops."""
    namespace, _, rest = kind.partition("::")
    name, _, overload = rest.partition(".")
    custom = OPDEFS.get(f"{namespace}::{name}")
    if custom is not None:
        return custom._init_fn
    target = getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")
    # Fixport's own first: they exist where torch's decomposition does not convert (torch's
    # lgamma ends in prims::lgamma, which has no ONNX function).
    for table in (LINALG_DECOMPOSITIONS, SCAN_DECOMPOSITIONS, SPECIAL_DECOMPOSITIONS):
        if target in table:
            return table[target]
    if target in decomposition_table:
        return decomposition_table[target]
    if has_composite_kernel(target):  # the op is written in other aten ops (scaled_dot_product_attention)
        # torch's own C++ kernel: while decomposing, torch puts this very function in its place
        return functools.partial(target._op_dk, torch._C.DispatchKey.CompositeImplicitAutograd)
    raise NotImplementedError(f"neither torch nor Fixport has a decomposition of {kind}")


@fix(
    "*",
    id="dynamo.inline_implementation",
    strategy="dynamo_decomposition",
    title="Inline the op's implementation (decomposition)",
    description="Replace the op by its Python implementation (custom op) or a decomposition (aten: "
                "Fixport's, else torch's).",
    min_opset=18,
    params={"kind": {"type": "str", "default": "", "label": "Op (namespace::name.overload)"}},
    notes="Works when the implementation is plain torch ops (no numpy, no .item()).",
    dynamo_only="a decomposition run on the captured program",
)
def symbolic(*args, **kwargs):
    return implementation(params["kind"])(*args, **kwargs)


params = default_params(symbolic)
