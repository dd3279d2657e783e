"""Any ATen op that onnxscript's torch_lib implements, replayed into this graph.

Fits every kind torch_lib knows (``aten::*`` mostly). The torch_lib function is traced with
torch's ONNX-IR op recorder; its standard-ONNX nodes are re-emitted with ``g.op`` and
torch_lib helper functions are inlined from their FunctionProto, so nothing custom is left.
torch_lib targets ONNX opset 18: below 18 it is unavailable (down-convert the model instead).
"""

TEMPLATE = {
    "id": "bridge.torchlib",
    "title": "onnxscript torch_lib implementation",
    "description": "Use onnxscript torch_lib's implementation of the op, re-emitted as standard ONNX nodes (opset 18+).",
    "family": "bridge",
    "fits": ["*"],
    "min_opset": 18,
    "max_opset": None,
    "params": {"target": {"type": "str", "default": "", "label": "torch_lib op (empty: this op)"}},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Subgraph (If/Loop) bodies inside torch_lib functions are not replayed.",
}


def symbolic(g, *args, **kwargs):
    from fixport.symbolics.torchlib_bridge import emit_torchlib

    return emit_torchlib(g, args, params["target"] or None)
