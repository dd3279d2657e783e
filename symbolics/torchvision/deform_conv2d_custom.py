"""``torchvision::deform_conv2d`` as a custom-domain op for a backend plugin (any opset).

C++ schema: ``torchvision::deform_conv2d(Tensor input, Tensor weight, Tensor offset,
Tensor mask, Tensor bias, int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h,
int dilation_w, int groups, int offset_groups, bool use_mask) -> Tensor``.
Emits ``<domain>::DeformConv2d(input, weight, offset, mask, bias)`` with the ints as
attributes. ONNX Runtime cannot run it without a custom-op library.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import default_params, fix


@fix(
    "torchvision::deform_conv2d",
    "torchvision::*",
    id="torchvision.deform_conv2d_custom",
    strategy="torchvision",
    title="deform_conv2d as custom-domain op",
    description="Emit custom::DeformConv2d with stride/pad/dilation attributes; ONNX Runtime cannot run it.",
    min_opset=9,
    params={
        "domain": {"type": "str", "default": "custom", "label": "Domain"},
        "op_name": {"type": "str", "default": "DeformConv2d", "label": "Op name"},
    },
    runs_in_onnxruntime=False,
    custom_opsets={"custom": 1},
    notes="A full decomposition into standard ops (GridSample-based) is not provided.",
    torchscript_only="a custom-domain g.op; dynamo's counterpart is dynamo.custom_domain_node",
)
@parse_args("v", "v", "v", "v", "v", "i", "i", "i", "i", "i", "i", "i", "i", "b")
def symbolic(g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
             dilation_h, dilation_w, groups, offset_groups, use_mask):
    return g.op(f"{params['domain']}::{params['op_name']}", input, weight, offset, mask, bias,
                stride_i=[stride_h, stride_w], padding_i=[pad_h, pad_w],
                dilation_i=[dilation_h, dilation_w], groups_i=groups,
                offset_groups_i=offset_groups, use_mask_i=int(use_mask))


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
