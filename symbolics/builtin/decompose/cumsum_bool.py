"""``aten::cumsum`` that also takes booleans: cast to int64 first (ONNX ``CumSum`` has no bool type).

Schema: ``aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor``. torch sums a
bool tensor as int64; the exporter's symbolic hands the bool to ``CumSum`` and ONNX Runtime refuses
the model. Other dtypes export as torch does (``CumSum``, then the requested dtype).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

TEMPLATE = {
    "id": "decompose.cumsum_bool",
    "title": "cumsum with a bool input cast to int64",
    "description": "CumSum over dim; a bool input is cast to int64 first, like torch's type promotion.",
    "family": "decompose",
    "fits": ["aten::cumsum"],
    "min_opset": 11,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "transformers' packed-sequence check sums (diff != 1), a bool tensor.",
}


def symbolic(g, self, dim, dtype=None):
    axis = g.op("Constant", value_t=torch.tensor(symbolic_helper._get_const(dim, "i", "dim"), dtype=torch.int64))
    source = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.UNDEFINED)
    if source == _type_utils.JitScalarType.BOOL:
        self = g.op("Cast", self, to_i=_type_utils.JitScalarType.INT64.onnx_type())
    result = g.op("CumSum", self, axis)
    if dtype is not None and not symbolic_helper._is_none(dtype):
        wanted = symbolic_helper._get_const(dtype, "i", "dtype")
        result = g.op("Cast", result, to_i=_type_utils.JitScalarType(wanted).onnx_type())
    return result
