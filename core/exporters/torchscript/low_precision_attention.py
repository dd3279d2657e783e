"""scaled_dot_product_attention with a bool mask on bfloat16 or float16 values, kept in their dtype.

torch's symbolic turns a bool mask into ``Where(mask, 0.0, -inf)`` of *float32* constants and adds
it to the scores, so the scalar-type pass widens the scores, the softmax and the output to float32:
the model's output is no longer torch's dtype. Made here into a mask of the query's own dtype
before torch's symbolic runs (it then takes its float-mask path), with the bool path's one extra
step after it: a fully masked row, NaN out of the softmax, is 0 as in torch.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.onnx._internal.torchscript_exporter import jit_utils
from torch.onnx._internal.torchscript_exporter import utils as exporter_utils

SDPA_KIND = "aten::scaled_dot_product_attention"
MASK_INPUT = 3  # query, key, value, attn_mask, ...
LOW_PRECISION = (torch.bfloat16, torch.float16)


def _dtype(value: Any) -> torch.dtype | None:
    value_type = value.type() if isinstance(value, torch._C.Value) else None
    return value_type.dtype() if isinstance(value_type, torch._C.TensorType) else None


def needs_mask_in_query_dtype(node: torch._C.Node, inputs: list[Any]) -> bool:
    """Whether ``node`` is an SDPA on low-precision values with a bool mask."""
    return (node.kind() == SDPA_KIND and len(inputs) > MASK_INPUT and _dtype(inputs[0]) in LOW_PRECISION
            and _dtype(inputs[MASK_INPUT]) == torch.bool)


def convert_with_mask_in_query_dtype(convert: Any, graph, block, node, inputs, env, values_in_env, new_nodes,
                                     *rest: Any) -> Any:
    """Run torch's conversion of ``node`` (``convert``, ``_run_symbolic_function``'s signature)
    with its bool mask given as an additive mask of the query's dtype."""
    g = jit_utils.GraphContext(graph=graph, block=block, opset=exporter_utils.GLOBALS.export_onnx_opset_version,
                               original_node=node, params_dict=exporter_utils._params_dict, env=env,
                               values_in_env=values_in_env, new_nodes=new_nodes)
    dtype = _dtype(inputs[0])
    zero = g.op("Constant", value_t=torch.tensor([0.0], dtype=dtype))
    additive = g.op("Where", inputs[MASK_INPUT], zero, g.op("Constant", value_t=torch.tensor([-float("inf")],
                                                                                              dtype=dtype)))
    additive.setType(inputs[0].type().with_dtype(dtype).with_sizes(None))
    given = list(inputs)
    given[MASK_INPUT] = additive
    output = convert(graph, block, node, given, env, values_in_env, new_nodes, *rest)
    if not isinstance(output, torch._C.Value):
        return output
    kept = g.op("Where", g.op("IsNaN", output), zero, output)
    kept.setType(output.type())
    return kept
