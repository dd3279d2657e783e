"""``aten::adaptive_avg_pool2d`` for any output size: two MatMuls with constant averaging matrices.

Schema: ``aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor``.
Output cell ``i`` averages input rows ``floor(i*H/oh)`` to ``ceil((i+1)*H/oh)``, like torch, so
``y = P_h @ x @ P_w^T``. Shape-specialised: the matrices are built for the traced H and W.
"""

import math

import numpy as np
from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _averaging_matrix(size, out_size, dtype):
    matrix = np.zeros((out_size, size), dtype=dtype.numpy())
    for i in range(out_size):
        start, end = (i * size) // out_size, math.ceil((i + 1) * size / out_size)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


@fix(
    "aten::adaptive_avg_pool2d.default",
    id="decompose.adaptive_avg_pool2d_matmul",
    strategy="decompose",
    title="adaptive average pooling via constant MatMuls",
    description="Any output size (also ones that do not divide the input): y = P_h @ x @ P_w^T.",
    min_opset=9,
    shape_specialised=True,
    notes="Shape-specialised: needs static height and width; exact to float rounding.",
)
def symbolic(self, output_size: list):
    height, width = self.shape[-2:] if self.shape is not None else (None, None)
    if not (isinstance(height, int) and isinstance(width, int)):
        raise RuntimeError("adaptive_avg_pool2d_matmul needs a static height and width")
    out_h, out_w = [o if o is not None else s for o, s in zip(output_size, (height, width))]
    dtype = self.dtype or ir.DataType.FLOAT
    rows = op.Constant(value=ir.tensor(_averaging_matrix(height, out_h, dtype)))
    cols = op.Constant(value=ir.tensor(np.ascontiguousarray(_averaging_matrix(width, out_w, dtype).T)))
    return op.MatMul(rows, op.MatMul(self, cols))
