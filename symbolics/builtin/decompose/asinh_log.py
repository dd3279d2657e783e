"""``aten::asinh`` from Log/Sqrt for opsets without ONNX ``Asinh`` (below 9).

Schema: ``aten::asinh(Tensor self) -> Tensor``.
asinh(x) = sign(x) * log(|x| + sqrt(x*x + 1)); the odd form avoids cancellation for x << 0.
sign is built from Less + Cast (Sign is opset 9).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.asinh_log",
    "title": "asinh via Log/Sqrt",
    "description": "Decompose asinh into Abs, Mul, Add, Sqrt, Log (works from opset 7).",
    "family": "decompose",
    "fits": ["aten::asinh"],
    "min_opset": 7,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "From opset 9 prefer standard.asinh (one node).",
}


def _const(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT)
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype.dtype()))


def _sign(g, x):
    dtype = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.FLOAT)
    negative = g.op("Cast", g.op("Less", x, _const(g, 0.0, x)), to_i=dtype.onnx_type())
    return g.op("Sub", _const(g, 1.0, x), g.op("Mul", _const(g, 2.0, x), negative))


@parse_args("v")
def symbolic(g, self):
    magnitude = g.op("Abs", self)
    root = g.op("Sqrt", g.op("Add", g.op("Mul", self, self), _const(g, 1.0, self)))
    return g.op("Mul", _sign(g, self), g.op("Log", g.op("Add", magnitude, root)))
