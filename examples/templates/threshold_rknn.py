"""``aten::threshold`` as the RKNN custom op ``rknn_cst::cstThreshold`` (tutorial example 2).

Written for ``examples/threshold.py``.
Schema: ``aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor``.
threshold and value become float attributes. ONNX Runtime cannot run this node; the RKNN
toolkit (or your plugin) must implement it.
"""

from torch.onnx._internal.torchscript_exporter.symbolic_helper import parse_args

TEMPLATE = {
    "id": "custom_domain.threshold_rknn",
    "title": "threshold as rknn_cst::cstThreshold",
    "description": "Emit rknn_cst::cstThreshold(threshold_f, value_f); ONNX Runtime cannot run it.",
    "family": "custom_domain",
    "fits": ["aten::threshold"],
    "min_opset": 1,
    "max_opset": None,
    "params": {
        "domain": {"type": "str", "default": "rknn_cst", "label": "Domain"},
        "op_name": {"type": "str", "default": "cstThreshold", "label": "Op name"},
    },
    "runs_in_onnxruntime": False,
    "custom_opsets": {"rknn_cst": 1},
    "notes": "Change the domain in custom_opsets too when you change it here.",
}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


@parse_args("v", "f", "f")
def symbolic(g, self, threshold, value):
    return g.op(f"{params['domain']}::{params['op_name']}", self, threshold_f=threshold, value_f=value)
