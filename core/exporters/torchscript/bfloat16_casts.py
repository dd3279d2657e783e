"""torch's scalar-type pass writes bfloat16 Casts with the wrong type number.

When an op mixes a bfloat16 tensor with a Python float (scaled_dot_product_attention's
``scale``, ``x * 0.5``), ``_jit_pass_onnx_scalar_type_analysis`` inserts ``Cast(to=15)``:
15 is c10's number for BFloat16, but ONNX's 15 is COMPLEX128 (bfloat16 is 16). The value is
then typed ComplexDouble and torch's serializer refuses the model. ONNX's Cast has no complex
target, so a ``Cast(to=15)`` in a TorchScript export is always this mistake: it is renumbered
to bfloat16 right after the pass, before constant folding and shape inference read it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from onnx import TensorProto

from fixport.core.exporters.torchscript.script_part import all_nodes

C10_BFLOAT16 = 15  # c10::ScalarType::BFloat16, which the pass writes where ONNX wants BFLOAT16
assert TensorProto.COMPLEX128 == C10_BFLOAT16 and TensorProto.BFLOAT16 == 16  # why the mix-up bites


def renumber_bfloat16_casts(graph: torch._C.Graph) -> int:
    """Make each ``onnx::Cast(to=15)`` a Cast to bfloat16; returns how many were renumbered."""
    renumbered = 0
    for node in all_nodes(graph):
        if node.kind() != "onnx::Cast" or not node.hasAttribute("to") or node.i("to") != C10_BFLOAT16:
            continue
        node.i_("to", TensorProto.BFLOAT16)
        for value in node.outputs():
            value_type = value.type()
            if isinstance(value_type, torch._C.TensorType):
                value.setType(value_type.with_dtype(torch.bfloat16))
        renumbered += 1
    return renumbered


@contextmanager
def bfloat16_casts_renumbered() -> Iterator[None]:
    """Wrap torch's scalar-type pass for one export so its bfloat16 Casts come out right."""
    original: Callable[..., Any] = torch._C._jit_pass_onnx_scalar_type_analysis

    def scalar_type_analysis(graph: torch._C.Graph, *args: Any, **kwargs: Any) -> Any:
        result = original(graph, *args, **kwargs)
        renumber_bfloat16_casts(graph)
        return result

    torch._C._jit_pass_onnx_scalar_type_analysis = scalar_type_analysis
    try:
        yield
    finally:
        torch._C._jit_pass_onnx_scalar_type_analysis = original
