"""``torchvision::deform_conv2d`` as the standard ONNX ``DeformConv`` (opset 19).

C++ schema (argument order differs from the Python API!):
``torchvision::deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask,
Tensor bias, int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h,
int dilation_w, int groups, int offset_groups, bool use_mask) -> Tensor``.
ONNX: ``DeformConv(X, W, offset, B, mask)`` with dilations, group, offset_group, pads,
strides, kernel_shape. The mask input is passed only when ``use_mask`` is true.
"""

from torch.onnx._internal.torchscript_exporter import symbolic_helper
from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import fix


@fix(
    "torchvision::deform_conv2d",
    id="torchvision.deform_conv2d_onnx",
    strategy="torchvision",
    title="deform_conv2d -> ONNX DeformConv",
    description="Map torchvision deform_conv2d onto ONNX DeformConv (opset 19, ONNX Runtime CPU runs it).",
    min_opset=19,
    notes="Checked against ONNX Runtime 1.32 CPU. Below opset 19 use the custom-domain route.",
    torchscript_only=("DeformConv is an opset-19 op; ONNX functions are recorded against opset 18 (torch_lib's) and "
                      "replayed lower"),
)
@parse_args("v", "v", "v", "v", "v", "i", "i", "i", "i", "i", "i", "i", "i", "b")
def symbolic(g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
             dilation_h, dilation_w, groups, offset_groups, use_mask):
    inputs = [input, weight, offset, bias] + ([mask] if use_mask else [])
    attributes = dict(dilations_i=[dilation_h, dilation_w], group_i=groups,
                      offset_group_i=offset_groups, pads_i=[pad_h, pad_w, pad_h, pad_w],
                      strides_i=[stride_h, stride_w])
    kernel = (symbolic_helper._get_tensor_sizes(weight) or [None] * 4)[2:]
    if len(kernel) == 2 and all(isinstance(k, int) for k in kernel):
        attributes["kernel_shape_i"] = kernel
    return g.op("DeformConv", *inputs, **attributes)
