"""``aten::selu`` from Relu/Exp: scale * (max(0, x) + min(0, alpha * (exp(x) - 1))).

Schema: ``aten::selu(Tensor self) -> Tensor``.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "decompose.selu",
    "title": "SELU via Relu/Exp",
    "description": "Decompose SELU into Relu, Exp, Sub, Mul, Neg (no Selu op needed).",
    "family": "decompose",
    "fits": ["aten::selu"],
    "min_opset": 7,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Constants are torch's: alpha=1.6732632423543772, scale=1.0507009873554805.",
}

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946


def _const(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT)
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype.dtype()))


@parse_args("v")
def symbolic(g, self):
    positive = g.op("Relu", self)
    negative_part = g.op("Neg", g.op("Relu", g.op("Neg", self)))  # min(0, x)
    elu = g.op("Mul", _const(g, ALPHA, self), g.op("Sub", g.op("Exp", negative_part), _const(g, 1.0, self)))
    return g.op("Mul", _const(g, SCALE, self), g.op("Add", positive, elu))
