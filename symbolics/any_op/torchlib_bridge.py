"""Any ATen op that onnxscript's torch_lib implements, replayed into this graph.

Fits every kind torch_lib knows (``aten::*`` mostly). The torch_lib function is traced with
torch's ONNX-IR op recorder; its standard-ONNX nodes are re-emitted with ``g.op`` and
torch_lib helper functions are inlined from their FunctionProto, so nothing custom is left.
torch_lib targets ONNX opset 18; below 18 each op is re-emitted in its form at the export's
opset (inputs that were attributes then, Split sizes), and an op that has no such form stops
the fix with an error naming it. ``fix --auto`` keeps it only when ONNX Runtime runs the result
and it matches torch.
"""

from fixport.symbolics.api import default_params, emit_torchlib, fix


@fix(
    "*",
    id="bridge.torchlib",
    strategy="bridge",
    title="onnxscript torch_lib implementation",
    description=("Use onnxscript torch_lib's implementation of the op, re-emitted as standard ONNX nodes at"
                 " the export's opset."),
    min_opset=7,
    params={"target": {"type": "str", "default": "", "label": "torch_lib op (empty: this op)"}},
    notes=("Subgraph (If/Loop) bodies inside torch_lib functions are not replayed. Below opset 18 ops whose"
           " signature changed are adapted or refused by name."),
    torchscript_only="replays torch_lib into a TorchScript graph; the dynamo exporter calls torch_lib itself",
)
def symbolic(g, *args, **kwargs):
    return emit_torchlib(g, args, params["target"] or None)


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
