"""``aten::_grouped_mm`` for MoE experts: every row times its group's matrix, chosen by ``offs``.

Schema: ``aten::_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None,
ScalarType? out_dtype=None) -> Tensor``. Covers the 2-D x 3-D ragged case transformers' MoE layers
use (``self`` (S, K) sorted by expert, ``mat2`` (E, K, N), ``offs`` the cumulative row ends) and the
plain batched case without ``offs``. Every row is multiplied by every expert and the right product
kept (E times the FLOPs of the ragged kernel; exact).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

TEMPLATE = {
    "id": "moe.grouped_mm",
    "title": "grouped matmul via MatMul over all groups + select",
    "description": "Multiply each row by every group's matrix and keep the one its offs range names.",
    "family": "moe",
    "fits": ["aten::_grouped_mm"],
    "min_opset": 13,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Rows past the last offset come out as zeros.",
}


def _const(g, value, dtype=torch.int64):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def symbolic(g, self, mat2, offs=None, bias=None, out_dtype=None):
    int64 = _type_utils.JitScalarType.INT64.onnx_type()
    if offs is None or symbolic_helper._is_none(offs):
        result = g.op("MatMul", self, mat2)
    else:
        if symbolic_helper._get_tensor_rank(self) != 2 or symbolic_helper._get_tensor_rank(mat2) != 3:
            raise RuntimeError("only the 2-D input x 3-D weights case with offs is covered")
        every = g.op("MatMul", g.op("Unsqueeze", self, _const(g, [0])), mat2)  # (E, S, N)
        rows = g.op("Range", _const(g, 0), g.op("Gather", g.op("Shape", self), _const(g, 0), axis_i=0), _const(g, 1))
        ends = g.op("Cast", offs, to_i=int64)
        # group of row s: how many group ends are <= s
        group = g.op("ReduceSum", g.op("Cast", g.op("LessOrEqual", g.op("Unsqueeze", ends, _const(g, [0])),
                                                    g.op("Unsqueeze", rows, _const(g, [1]))), to_i=int64),
                     _const(g, [1]), keepdims_i=0)  # (S,)
        experts = g.op("Range", _const(g, 0), g.op("Gather", g.op("Shape", mat2), _const(g, 0), axis_i=0),
                       _const(g, 1))
        mask = g.op("Equal", g.op("Unsqueeze", experts, _const(g, [1])), g.op("Unsqueeze", group, _const(g, [0])))
        dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).onnx_type()
        mask = g.op("Cast", g.op("Unsqueeze", mask, _const(g, [2])), to_i=dtype)  # (E, S, 1)
        result = g.op("ReduceSum", g.op("Mul", every, mask), _const(g, [0]), keepdims_i=0)
    if bias is not None and not symbolic_helper._is_none(bias):
        raise RuntimeError("a bias is not covered")
    return result
