"""``aten::adaptive_avg_pool2d`` for any output size: two MatMuls with constant averaging matrices.

Schema: ``aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor``.
Output cell ``i`` averages input rows ``floor(i*H/oh)`` to ``ceil((i+1)*H/oh)``, like torch, so
``y = P_h @ x @ P_w^T``. Shape-specialised: the matrices are built for the traced H and W.
"""

import math

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix


def _averaging_matrix(size, out_size, dtype):
    matrix = torch.zeros(out_size, size, dtype=dtype)
    for i in range(out_size):
        start, end = (i * size) // out_size, math.ceil((i + 1) * size / out_size)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


@fix(
    "aten::adaptive_avg_pool2d",
    id="decompose.adaptive_avg_pool2d_matmul",
    strategy="decompose",
    title="adaptive average pooling via constant MatMuls",
    description="Any output size (also ones that do not divide the input): y = P_h @ x @ P_w^T.",
    min_opset=9,
    shape_specialised=True,
    notes="Shape-specialised: needs static height and width; exact to float rounding.",
    torchscript_only="not converted yet",
)
@parse_args("v", "is")
def symbolic(g, self, output_size):
    sizes = symbolic_helper._get_tensor_sizes(self)
    if not sizes or any(s is None for s in sizes[-2:]):
        raise RuntimeError("adaptive_avg_pool2d_matmul needs a static height and width")
    height, width = sizes[-2:]
    out_h, out_w = [o if o is not None else s for o, s in zip(output_size, (height, width))]
    dtype = _type_utils.JitScalarType.from_value(self, _type_utils.JitScalarType.FLOAT).dtype()
    rows = g.op("Constant", value_t=_averaging_matrix(height, out_h, dtype))
    cols = g.op("Constant", value_t=_averaging_matrix(width, out_w, dtype).t().contiguous())
    return g.op("MatMul", rows, g.op("MatMul", self, cols))
