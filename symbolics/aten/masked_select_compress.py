"""``aten::masked_select`` as ONNX Compress over the broadcast tensor and mask.

Schema: ``aten::masked_select(Tensor self, Tensor mask) -> Tensor``. torch broadcasts ``self``
and ``mask`` together and returns, flattened in row-major order, the elements where the mask is
true: a 1-D tensor whose length depends on the mask's values. ONNX Compress without an axis does
exactly that on its flattened input. Where broadcasts the two to their common shape first.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::masked_select.default",
    id="onnx_function.masked_select_compress",
    strategy="onnx_function",
    title="masked_select with Compress",
    description="Broadcast the tensor and the mask, flatten both and keep the elements the mask selects.",
    min_opset=11,
    notes="The output length depends on the mask's values: a dynamic dim in the exported model.",
)
def symbolic(self, mask):
    common = op.Shape(op.Where(mask, self, self))  # the broadcast shape of self and mask
    flat_mask = op.Reshape(op.Expand(mask, common), op.Constant(value_ints=[-1]))
    return op.Compress(op.Expand(self, common), flat_mask)
