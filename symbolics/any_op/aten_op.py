"""Keep one op as an ``ATen`` node (domain ``org.pytorch.aten``), like ONNX_ATEN_FALLBACK.

Fits any kind. Emits ``org.pytorch.aten::ATen[operator=<op>, overload_name=<overload>](inputs...)``,
the node ``g.at()`` / ``aten_op`` produce under ONNX_ATEN_FALLBACK.
Only runtimes with the ATen operator (e.g. ONNX Runtime built for ORTModule/training, or
PyTorch itself) can run it; stock ONNX Runtime cannot.
"""

import torch

from fixport.symbolics.api import default_params, fix


@fix(
    "*",
    id="aten_fallback.aten_op",
    strategy="aten_fallback",
    title="ATen fallback node",
    description="Export the op unchanged as an ATen node; stock ONNX Runtime cannot run it.",
    min_opset=1,
    params={"operator": {"type": "str", "default": "", "label": "ATen operator (empty: this op)"}},
    runs_in_onnxruntime=False,
    custom_opsets={"org.pytorch.aten": 1},
    notes="Same node the exporter makes with operator_export_type=ONNX_ATEN_FALLBACK.",
    torchscript_only=("an ATen fallback node is the TorchScript exporter's own (operator_export_type); the "
                      "dynamo exporter has none"),
)
def symbolic(g, *args, **kwargs):
    node = g.original_node
    operator = params["operator"] or node.kind().split("::", 1)[1].rstrip("_")
    try:
        overload = torch._C.parse_schema(node.schema()).overload_name
    except RuntimeError:
        overload = ""
    # g.at(...) makes an aten::ATen node, which only export with
    # operator_export_type=ONNX_ATEN_FALLBACK accepts; the same node in its ONNX domain works
    # with the default export type.
    return g.op("org.pytorch.aten::ATen", *args, operator_s=operator, overload_name_s=overload,
                outputs=node.outputsSize())


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
