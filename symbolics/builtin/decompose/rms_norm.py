"""``aten::rms_norm`` from Pow/ReduceMean/Sqrt: ``x / sqrt(mean(x**2) + eps) * weight``.

Schema: ``aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None,
float? eps=None) -> Tensor``. Without ``eps`` torch uses the machine epsilon of the input's dtype.
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

TEMPLATE = {
    "id": "decompose.rms_norm",
    "title": "RMSNorm via ReduceMean + Sqrt",
    "description": "Normalise by the root mean square over the last dims, then scale by the weight.",
    "family": "decompose",
    "fits": ["aten::rms_norm"],
    "min_opset": 13,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Computed in the input's dtype, like torch's CPU kernel for float32.",
}


def _reduce_mean(g, value, axes):
    if g.opset >= 18:
        return g.op("ReduceMean", value, g.op("Constant", value_t=torch.tensor(axes)), keepdims_i=1)
    return g.op("ReduceMean", value, axes_i=axes, keepdims_i=1)


def symbolic(g, input, normalized_shape, weight=None, eps=None):
    dims = symbolic_helper._maybe_get_const(normalized_shape, "is")
    axes = list(range(-len(dims), 0))
    dtype = _type_utils.JitScalarType.from_value(input, _type_utils.JitScalarType.FLOAT).dtype()
    epsilon = None if eps is None or symbolic_helper._is_none(eps) else symbolic_helper._maybe_get_const(eps, "f")
    epsilon = torch.finfo(dtype).eps if epsilon is None else epsilon
    mean_square = _reduce_mean(g, g.op("Mul", input, input), axes)
    root = g.op("Sqrt", g.op("Add", mean_square, g.op("Constant", value_t=torch.tensor(epsilon, dtype=dtype))))
    normed = g.op("Div", input, root)
    if weight is None or symbolic_helper._is_none(weight):
        return normed
    return g.op("Mul", normed, weight)
