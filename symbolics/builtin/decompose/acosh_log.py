"""``aten::acosh`` from Log/Sqrt for opsets without ONNX ``Acosh`` (below 9).

Schema: ``aten::acosh(Tensor self) -> Tensor``.
acosh(x) = log(x + sqrt((x - 1) * (x + 1))); NaN for x < 1 like torch.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.acosh_log",
    "title": "acosh via Log/Sqrt",
    "description": "Decompose acosh into Sub, Add, Mul, Sqrt, Log (works from opset 7).",
    "family": "decompose",
    "fits": ["aten::acosh"],
    "min_opset": 7,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "From opset 9 prefer standard.acosh (one node).",
}


def _const(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT)
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype.dtype()))


@parse_args("v")
def symbolic(g, self):
    one = _const(g, 1.0, self)
    product = g.op("Mul", g.op("Sub", self, one), g.op("Add", self, one))
    return g.op("Log", g.op("Add", self, g.op("Sqrt", product)))
