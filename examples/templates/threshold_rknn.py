"""``aten::threshold`` as the RKNN custom op ``rknn_cst::cstThreshold`` (tutorial example 2).

Written for ``examples/threshold.py``.
Schema: ``aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor``.
threshold and value become float attributes. ONNX Runtime cannot run this node; the RKNN
toolkit (or your plugin) must implement it.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

from fixport.symbolics.api import default_params, fix


@fix(
    "aten::threshold",
    id="custom_domain.threshold_rknn",
    strategy="custom_domain",
    title="threshold as rknn_cst::cstThreshold",
    description="Emit rknn_cst::cstThreshold(threshold_f, value_f); ONNX Runtime cannot run it.",
    min_opset=1,
    params={
        "domain": {"type": "str", "default": "rknn_cst", "label": "Domain"},
        "op_name": {"type": "str", "default": "cstThreshold", "label": "Op name"},
    },
    runs_in_onnxruntime=False,
    custom_opsets={"rknn_cst": 1},
    notes="Change the domain in custom_opsets too when you change it here.",
    torchscript_only="a custom-domain g.op for the RKNN toolkit; dynamo's counterpart is dynamo.custom_domain_node",
)
@parse_args("v", "f", "f")
def symbolic(g, self, threshold, value):
    return g.op(f"{params['domain']}::{params['op_name']}", self, threshold_f=threshold, value_f=value)


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
