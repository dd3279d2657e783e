"""``aten::masked_select`` as ONNX Compress over the broadcast tensor and mask.

Schema: ``aten::masked_select(Tensor self, Tensor mask) -> Tensor``. torch broadcasts ``self``
and ``mask`` together and returns, flattened in row-major order, the elements where the mask is
true: a 1-D tensor whose length depends on the mask's values. ONNX Compress without an axis does
exactly that on its flattened input. Where broadcasts the two to their common shape first.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.onnx_functions import for_both_exporters

TEMPLATE = {
    "id": "onnx_function.masked_select_compress",
    "title": "masked_select with Compress",
    "description": "Broadcast the tensor and the mask, flatten both and keep the elements the mask selects.",
    "family": "onnx_function",
    "fits": ["aten::masked_select.default"],
    "min_opset": 11,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "The output length depends on the mask's values: a dynamic dim in the exported model.",
}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


@for_both_exporters
def symbolic(self, mask):
    common = op.Shape(op.Where(mask, self, self))  # the broadcast shape of self and mask
    flat_mask = op.Reshape(op.Expand(mask, common), op.Constant(value_ints=[-1]))
    return op.Compress(op.Expand(self, common), flat_mask)
