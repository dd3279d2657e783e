"""Any op as a custom-domain node ``domain::Name`` for a backend plugin (TensorRT, RKNN...).

Fits any kind (``*``). Tensor inputs stay inputs; the scalar arguments listed in
``params["attributes"]`` (``"index:name_suffix"``, e.g. ``"1:threshold_f, 2:value_f"``)
become node attributes. ONNX Runtime cannot run the node: the target runtime must
implement it. ``custom_opsets`` must name the domain (the form sets it from the params).
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import default_params, fix

_DESCRIPTORS = {"f": "f", "i": "i", "s": "s", "fs": "fs", "is": "is", "b": "b"}


@fix(
    "*",
    id="custom_domain.custom_op",
    strategy="custom_domain",
    title="Custom-domain op for a backend plugin",
    description="Emit domain::Name with chosen attributes; ONNX Runtime cannot run it (plugin needed).",
    min_opset=1,
    params={
        "domain": {"type": "str", "default": "custom", "label": "Domain"},
        "domain_version": {"type": "int", "default": 1, "label": "Domain version"},
        "op_name": {"type": "str", "default": "MyOp", "label": "Op name"},
        "attributes": {"type": "str", "default": "", "label": "Scalar args as attributes (1:alpha_f)"},
    },
    runs_in_onnxruntime=False,
    custom_opsets={"custom": 1},
    notes="Attribute suffixes: _f float, _i int, _s str, _fs floats, _is ints.",
    torchscript_only=("a custom-domain g.op with whatever inputs the node has; dynamo's counterpart is "
                      "dynamo.custom_domain_node"),
)
def symbolic(g, *args, **kwargs):
    attributes, used = {}, set()
    for item in filter(None, (part.strip() for part in params["attributes"].split(","))):
        index, _, name = item.partition(":")
        suffix = name.rsplit("_", 1)[-1]
        value = symbolic_helper._maybe_get_const(args[int(index)], _DESCRIPTORS[suffix])
        attributes[name.strip() if suffix != "b" else name.strip()[:-2] + "_i"] = value
        used.add(int(index))
    inputs = [a for i, a in enumerate(args) if i not in used and isinstance(a, torch._C.Value)
              and not symbolic_helper._is_none(a) and not symbolic_helper._is_constant(a)]
    outputs = g.original_node.outputsSize()  # ops with several outputs (cummax, kthvalue) return them all
    return g.op(f"{params['domain']}::{params['op_name']}", *inputs, outputs=outputs, **attributes)


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
