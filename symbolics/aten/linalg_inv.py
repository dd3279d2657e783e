"""``aten::linalg_inv`` for small static matrices: Gauss-Jordan elimination with partial pivoting, unrolled.

Schema: ``aten::linalg_inv(Tensor A) -> Tensor`` (batched ``(..., n, n)``). For each column the
row with the largest magnitude is swapped up (GatherElements), scaled to a unit pivot and
eliminated from every other row: ``n`` steps of a few elementwise ops, no loop in the graph.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix


def _const(g, value, dtype=torch.int64):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _column(g, value, index):
    """value[..., :, index:index+1]"""
    return g.op("Slice", value, _const(g, [index]), _const(g, [index + 1]), _const(g, [-1]))


def _row(g, value, index):
    """value[..., index:index+1, :]"""
    return g.op("Slice", value, _const(g, [index]), _const(g, [index + 1]), _const(g, [-2]))


@fix(
    "aten::linalg_inv",
    "aten::inverse",
    id="linalg.linalg_inv_gauss_jordan",
    strategy="linalg",
    title="matrix inverse via unrolled Gauss-Jordan",
    description="Invert (..., n, n) matrices with a static n by Gauss-Jordan with partial pivoting.",
    min_opset=13,
    notes="Meant for the small matrices of geometry (3x3, 4x4); the graph grows with n. Singular input gives inf/nan.",
    torchscript_only=("reads the matrix size from the traced output type where ONNX shape inference lost it "
                      "(kornia's pose inverse), which an ONNX function cannot see"),
)
def symbolic(g, self):
    sizes = symbolic_helper._get_tensor_sizes(self)
    if not sizes or sizes[-1] is None:  # ONNX shape inference lost it: the traced type still has it
        traced = g.original_node.output().type()
        sizes = traced.sizes() if traced.kind() == "TensorType" and traced.dim() else None
    if not sizes or sizes[-1] is None:
        raise RuntimeError("linalg_inv_gauss_jordan needs a static matrix size")
    n = sizes[-1]
    dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).dtype()
    identity = g.op("Expand", _const(g, torch.eye(n, dtype=dtype), dtype), g.op("Shape", self))
    work = g.op("Concat", self, identity, axis_i=-1)  # (..., n, 2n)
    rows = _const(g, list(range(n)))
    for k in range(n):
        magnitude = g.op("Abs", _column(g, work, k))  # (..., n, 1)
        below = _const(g, [[0.0]] * k + [[1.0]] * (n - k), dtype)  # rows above k are done
        pivot = g.op("ArgMax", g.op("Mul", magnitude, below), axis_i=-2, keepdims_i=1)  # (..., 1, 1)
        pivot = g.op("Squeeze", pivot, _const(g, [-1]))  # (..., 1)
        # swap rows k and pivot: index[i] = pivot if i == k, k if i == pivot, else i
        index = g.op("Where", g.op("Equal", rows, _const(g, k)), pivot,
                     g.op("Where", g.op("Equal", rows, pivot), _const(g, k), rows))  # (..., n)
        index = g.op("Expand", g.op("Unsqueeze", index, _const(g, [-1])), g.op("Shape", work))
        work = g.op("GatherElements", work, index, axis_i=-2)
        pivot_row = g.op("Div", _row(g, work, k), _column(g, _row(g, work, k), k))  # (..., 1, 2n)
        factors = g.op("Mul", _column(g, work, k), _const(g, [[0.0] if i == k else [1.0] for i in range(n)], dtype))
        work = g.op("Sub", work, g.op("Mul", factors, pivot_row))
        at_k = _const(g, [[1.0] if i == k else [0.0] for i in range(n)], dtype)
        work = g.op("Add", g.op("Mul", work, g.op("Sub", _const(g, 1.0, dtype), at_k)), g.op("Mul", at_k, pivot_row))
    return g.op("Slice", work, _const(g, [n]), _const(g, [2 * n]), _const(g, [-1]))
