"""``aten::median.dim`` as TopK over the axis, then the lower middle element.

Schema: ``aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)``.
torch's median of an even count is the lower of the two middle values: element ``(n - 1) // 2``
of the ascending order. Needs the axis length known at export time (a static shape). Among equal
values the index may differ from torch's. One ONNX function for both exporters.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::median.dim",
    id="onnx_function.median_dim_topk",
    strategy="onnx_function",
    title="Median over a dim with TopK",
    description="Sort the axis ascending with TopK, take element (n - 1) // 2 and its index.",
    min_opset=11,
    notes="The axis must have a static length.",
)
def symbolic(self, dim: int, keepdim: bool = False):
    rank = len(self.shape)
    axis = dim % rank
    length = self.shape[axis]
    if not isinstance(length, int):
        raise ValueError(f"median over axis {axis} needs its length at export time, got {length}")
    values, indices = op.TopK(self, op.Constant(value_ints=[length]), axis=axis, largest=0, sorted=1)
    middle = op.Constant(value_ints=[(length - 1) // 2])
    value, index = op.Gather(values, middle, axis=axis), op.Gather(indices, middle, axis=axis)
    if not keepdim:
        axes = op.Constant(value_ints=[axis])
        value, index = op.Squeeze(value, axes), op.Squeeze(index, axes)
    return value, index
