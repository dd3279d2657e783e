"""``aten::constant_pad_nd`` on complex values: pad every complex axis, never the (real, imag) one.

Schema: ``aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor``. Both
exporters carry a complex tensor as a real one with a trailing axis of 2 (real, imag); torch_lib
has no complex constant_pad_nd. torch's ``pad`` lists (begin, end) pairs from the last
axis backwards; ONNX Pad takes every axis's begins, then every axis's ends, first axis first. The
(real, imag) axis gets no padding. The pad value is complex ``value + 0j``: torch's FFTs pad with
zeros. One ONNX function for both exporters, for complex inputs only.
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


@fix(
    "aten::constant_pad_nd.default",
    id="onnx_function.complex_constant_pad_nd",
    strategy="onnx_function",
    title="Constant padding on complex values",
    description="Pad the complex axes of the real layout; the (real, imag) axis stays as it is.",
    min_opset=13,
    notes="Registered for complex inputs only. Negative pads crop, as in torch.",
    complex_inputs=True,
)
def symbolic(self, pad, value: float = 0.0):
    rank = len(self.shape) - 1  # the complex tensor's rank
    pairs = list(pad) + [0] * (rank * 2 - len(pad))
    pads = pairs[-2::-2] + [0] + pairs[-1::-2] + [0]
    real_part = op.Constant(value=ir.tensor([float(value), 0.0], dtype=self.dtype))
    padded = op.Pad(self, op.Constant(value_ints=pads))
    if float(value) == 0.0:
        return padded
    # a non-zero value: pad with zeros, then add (value, 0) where the padding went
    ones = op.Pad(op.ConstantOfShape(op.Shape(self), value=ir.tensor([1.0], dtype=self.dtype)),
                  op.Constant(value_ints=pads))
    return op.Add(padded, op.Mul(op.Sub(op.CastLike(op.Constant(value_float=1.0), self), ones), real_part))
