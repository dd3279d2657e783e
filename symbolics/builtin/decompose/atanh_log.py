"""``aten::atanh`` from Log for opsets without ONNX ``Atanh`` (below 9).

Schema: ``aten::atanh(Tensor self) -> Tensor``.
atanh(x) = 0.5 * log((1 + x) / (1 - x)); +-inf at +-1 and NaN outside like torch.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.atanh_log",
    "title": "atanh via Log",
    "description": "Decompose atanh into Add, Sub, Div, Log, Mul (works from opset 7).",
    "family": "decompose",
    "fits": ["aten::atanh"],
    "min_opset": 7,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "From opset 9 prefer standard.atanh (one node).",
}


def _const(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT)
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype.dtype()))


@parse_args("v")
def symbolic(g, self):
    one = _const(g, 1.0, self)
    ratio = g.op("Div", g.op("Add", one, self), g.op("Sub", one, self))
    return g.op("Mul", _const(g, 0.5, self), g.op("Log", ratio))
