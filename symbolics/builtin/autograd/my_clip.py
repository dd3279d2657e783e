"""autograd.Function ``MyClip`` (a ``prim::PythonOp``) as ONNX Clip.

Forward: ``def forward(ctx, x, min) -> x.clamp(min=min)``. Fixport registers this through its single ``prim::PythonOp``
dispatcher, which picks it by Function name and copies the original output type. Non-tensor
forward arguments arrive as Python values.
"""

TEMPLATE = {
    "id": "autograd.my_clip",
    "title": "MyClip -> Clip",
    "description": "Clamp from below: Clip(x, min) with min as an input (opset 11+).",
    "family": "autograd",
    "fits": ["prim::PythonOp[MyClip]"],
    "min_opset": 11,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Same as the tutorial's dispatcher branch for MyClip.",
}


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def symbolic(g, x, min):
    return g.op("Clip", x, _const_like(g, min, x))
