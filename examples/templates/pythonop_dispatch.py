"""One ``prim::PythonOp`` symbolic that dispatches on the autograd.Function name.

The tutorial's route, for the three Functions of ``examples/autograd_python_op.py``.
torch 2.14 calls a symbolic registered for ``prim::PythonOp`` as
``symbolic(g, *inputs, inplace=int, module=str, name=str)``: tensor inputs arrive as Values,
non-tensor arguments of ``forward`` as plain Python values (e.g. MyClip's ``min`` is a float).
The node is not passed; it is ``g.original_node``. Register it as ``"prim::PythonOp"`` (the
old tutorial's ``"::prim_PythonOp"`` becomes ``aten::prim_PythonOp`` and is never called).
Functions with a static ``symbolic`` method never reach this dispatcher. Applied in Fixport to
one Function by name, it becomes that class's static ``symbolic`` (``g.original_node`` is still set).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix


def _const_like(g, value, like):
    dtype = _type_utils.JitScalarType.from_value(like, _type_utils.JitScalarType.FLOAT).dtype()
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


@fix(
    "prim::PythonOp",
    id="autograd.pythonop_dispatch",
    strategy="autograd",
    title="prim::PythonOp dispatcher by Function name",
    description="Tutorial dispatcher: MyClip -> Clip, MyRelu -> Relu, MyAddPyOp -> 2*a+b; output type copied.",
    min_opset=11,
    notes="Registering any prim::PythonOp symbolic stops torch from inlining other Functions' forward.",
    torchscript_only="an autograd.Function reaches the exporter as prim::PythonOp only under TorchScript",
)
def symbolic(g, *args, **kwargs):
    node = g.original_node
    name = kwargs["name"]
    if name == "MyClip":
        result = g.op("Clip", args[0], _const_like(g, args[1], args[0]))  # Clip min is an input from 11
    elif name == "MyRelu":
        result = g.op("Relu", args[0])
    elif name == "MyAddPyOp":
        result = g.op("Add", g.op("Mul", _const_like(g, 2.0, args[0]), args[0]), args[1])
    else:
        return symbolic_helper._unimplemented("prim::PythonOp", "unknown Function " + name)
    if node is not None:  # torch passes no node to a Function's static `symbolic`
        result.setType(node.output().type())  # copy type (and shape) from the original node
    return result
