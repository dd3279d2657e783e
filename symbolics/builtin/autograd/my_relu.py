"""autograd.Function ``MyRelu`` (a ``prim::PythonOp``) as ONNX Relu.

Forward: ``def forward(ctx, x) -> x.clamp(min=0)``. Fixport registers this through its single ``prim::PythonOp``
dispatcher, which picks it by Function name and copies the original output type. Non-tensor
forward arguments arrive as Python values.
"""

TEMPLATE = {
    "id": "autograd.my_relu",
    "title": "MyRelu -> Relu",
    "description": "Relu(x).",
    "family": "autograd",
    "fits": ["prim::PythonOp[MyRelu]"],
    "min_opset": 6,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Same as the tutorial's dispatcher branch for MyRelu.",
}


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def symbolic(g, x):
    return g.op("Relu", x)
