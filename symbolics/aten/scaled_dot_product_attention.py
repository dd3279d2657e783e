"""``aten::scaled_dot_product_attention`` as MatMul/Softmax/MatMul for opsets below 14.

Schema: ``aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value,
Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None,
bool enable_gqa=False) -> Tensor``. Dropout is ignored (inference). Boolean masks become
``Where(mask, scores, -inf)``, float masks are added. ``is_causal`` needs static sizes.
"""

import math

import numpy as np
from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _like(value, x):
    return op.Constant(value=ir.tensor(value, dtype=x.dtype or ir.DataType.FLOAT))


def _scale(query, scale):
    """``scale``, else 1 / sqrt(the query's last size), read from its shape at run time if need be."""
    if scale is not None:
        return _like(scale, query)
    last = query.shape[-1] if query.shape is not None else None
    if isinstance(last, int):
        return _like(1.0 / math.sqrt(last), query)
    size = op.Gather(op.Shape(query), op.Constant(value_int=len(query.shape) - 1), axis=0)
    return op.Reciprocal(op.Sqrt(op.Cast(size, to=query.dtype or ir.DataType.FLOAT)))


@fix(
    "aten::scaled_dot_product_attention.default",
    id="decompose.scaled_dot_product_attention",
    strategy="decompose",
    title="SDPA via MatMul + Softmax",
    description="Decompose scaled_dot_product_attention into Transpose, MatMul, Softmax (opset 9+).",
    min_opset=9,
    notes="torch registers SDPA only from opset 14 (ViT fails at 9-13). enable_gqa is not covered.",
)
def symbolic(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
             scale: float = None, enable_gqa: bool = False):
    if enable_gqa:
        raise ValueError("enable_gqa=True is not supported by this template")
    rank = len(query.shape)
    key_t = op.Transpose(key, perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = op.MatMul(op.Mul(query, _scale(query, scale)), key_t)
    minus_inf = _like(float("-inf"), query)
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        if not (isinstance(length, int) and isinstance(source, int)):
            raise ValueError("is_causal=True needs static query and key lengths")
        causal = np.tril(np.ones((length, source), dtype=bool))
        scores = op.Where(op.Constant(value=ir.tensor(causal)), scores, minus_inf)
    if attn_mask is not None:
        if attn_mask.dtype == ir.DataType.BOOL:
            scores = op.Where(attn_mask, scores, minus_inf)
        else:
            scores = op.Add(scores, attn_mask)
    return op.MatMul(op.Softmax(scores, axis=rank - 1), value)
