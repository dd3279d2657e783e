"""Map any op 1:1 onto one standard ONNX op.

Fits any kind (``*``): every tensor input is passed in order to ``params["op_type"]``;
constant/None inputs are dropped unless ``keep_constant_inputs`` is set. Extra attributes
come from ``params["attributes"]``, e.g. ``"alpha_f=0.5, axis_i=1"`` (exporter suffixes).
Schema: ``<any>(Tensor self, ...) -> Tensor``.
"""

import ast

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import default_params, fix


def _attributes(text):
    result = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        result[name.strip()] = ast.literal_eval(value.strip())
    return result


@fix(
    "*",
    id="standard.one_to_one",
    strategy="standard",
    title="1:1 standard ONNX op",
    description="Emit one standard ONNX op with the inputs in order and attributes from params.",
    min_opset=1,
    params={
        "op_type": {"type": "str", "default": "Identity", "label": "ONNX op type"},
        "attributes": {"type": "str", "default": "", "label": "Attributes (name_f=1.0, axis_i=1)"},
        "keep_constant_inputs": {"type": "bool", "default": False, "label": "Keep constant inputs"},
    },
    notes="Check the ONNX op's input order and that it exists at the export opset.",
    torchscript_only="writes the ONNX op named in params with attributes in g.op's suffix form (alpha_f=0.5)",
)
def symbolic(g, *args, **kwargs):
    keep = params["keep_constant_inputs"]
    inputs = [a for a in args if isinstance(a, torch._C.Value) and not symbolic_helper._is_none(a)
              and (keep or not symbolic_helper._is_constant(a))]
    return g.op(params["op_type"], *inputs, **_attributes(params["attributes"]))


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
