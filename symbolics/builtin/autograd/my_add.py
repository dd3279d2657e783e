"""autograd.Function ``MyAddPyOp`` (a ``prim::PythonOp``) as ONNX Add/Mul.

Forward: ``def forward(ctx, a, b) -> 2 * a + b``. Fixport registers this through its single ``prim::PythonOp``
dispatcher, which picks it by Function name and copies the original output type. Non-tensor
forward arguments arrive as Python values.
"""

TEMPLATE = {
    "id": "autograd.my_add",
    "title": "MyAddPyOp -> Add/Mul",
    "description": "2 * a + b as Mul and Add.",
    "family": "autograd",
    "fits": ["prim::PythonOp[MyAddPyOp]"],
    "min_opset": 7,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Same as the tutorial's dispatcher branch for MyAddPyOp.",
}


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def symbolic(g, a, b):
    return g.op("Add", g.op("Mul", _const_like(g, 2.0, a), a), b)
