"""Emit the op as one node of a custom ONNX domain, for a runtime that implements it.

Schema: the op's own; tensor inputs pass in order, other arguments are dropped. ONNX Runtime
cannot run the node unless a custom-op library registers it; ``custom_opsets`` names the domain.
"""

from fixport.symbolics.api import custom_node, default_params, fix


@fix(
    "*",
    id="dynamo.custom_domain_node",
    strategy="dynamo_translation",
    title="Custom-domain node",
    description="One node <domain>::<op_name> with the op's tensor inputs, for a custom runtime kernel.",
    min_opset=18,
    params={
        "domain": {"type": "str", "default": "custom", "label": "Domain"},
        "op_name": {"type": "str", "default": "CustomOp", "label": "Op name"},
        "domain_version": {"type": "int", "default": 1, "label": "Domain version"},
    },
    runs_in_onnxruntime=False,
    custom_opsets={"custom": 1},
    notes="The target runtime must implement the node.",
    dynamo_only="a node of a custom domain in the dynamo exporter's translation table",
)
def symbolic(*args, **kwargs):
    tensors = [a for a in (*args, *kwargs.values()) if hasattr(a, "producer")]
    return custom_node(params["domain"], params["op_name"], tensors)


params = default_params(symbolic)
