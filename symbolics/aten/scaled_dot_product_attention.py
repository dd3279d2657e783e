"""``aten::scaled_dot_product_attention`` as MatMul/Softmax/MatMul for opsets below 14.

Schema: ``aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value,
Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None,
bool enable_gqa=False) -> Tensor``. Dropout is ignored (inference). Boolean masks become
``Where(mask, scores, -inf)``, float masks are added. ``is_causal`` needs static sizes.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix


def _const(g, value, dtype):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


@fix(
    "aten::scaled_dot_product_attention",
    id="decompose.scaled_dot_product_attention",
    strategy="decompose",
    title="SDPA via MatMul + Softmax",
    description="Decompose scaled_dot_product_attention into Transpose, MatMul, Softmax (opset 9+).",
    min_opset=9,
    notes="torch registers SDPA only from opset 14 (ViT fails at 9-13). enable_gqa is not covered.",
    torchscript_only="not converted yet",
)
@parse_args("v", "v", "v", "v", "f", "b", "v", "b")
def symbolic(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
    if enable_gqa:
        raise ValueError("enable_gqa=True is not supported by this template")
    rank = symbolic_helper._get_tensor_rank(query)
    dtype = _type_utils.JitScalarType.from_value(query, _type_utils.JitScalarType.FLOAT).dtype()
    sizes = symbolic_helper._get_tensor_sizes(query) or [None]
    if scale is None or symbolic_helper._is_none(scale):
        scale_value = _const(g, 1.0 / float(sizes[-1]) ** 0.5, dtype) if sizes[-1] else g.op(
            "Reciprocal", g.op("Sqrt", g.op("Cast", g.op("Gather", g.op("Shape", query),
            _const(g, rank - 1, torch.int64), axis_i=0), to_i=_type_utils.JitScalarType.from_dtype(dtype).onnx_type())))
    else:
        scale_value = _const(g, symbolic_helper._maybe_get_const(scale, "f"), dtype)
    key_t = g.op("Transpose", key, perm_i=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = g.op("MatMul", g.op("Mul", query, scale_value), key_t)
    minus_inf = _const(g, float("-inf"), dtype)
    if is_causal:
        length, source = sizes[-2], (symbolic_helper._get_tensor_sizes(key) or [None, None])[-2]
        causal = torch.ones(length, source, dtype=torch.bool).tril()
        scores = g.op("Where", g.op("Constant", value_t=causal), scores, minus_inf)
    if attn_mask is not None and not symbolic_helper._is_none(attn_mask):
        if _type_utils.JitScalarType.from_value(attn_mask) == _type_utils.JitScalarType.BOOL:
            scores = g.op("Where", attn_mask, scores, minus_inf)
        else:
            scores = g.op("Add", scores, attn_mask)
    return g.op("MatMul", g.op("Softmax", scores, axis_i=rank - 1), value)
