"""The static ``symbolic`` route: give the autograd.Function its own ``symbolic`` method.

Paste this function into the Function class as ``@staticmethod def symbolic(g, ...)``; the
exporter then calls it directly (``_run_symbolic_method``: ``symbolic(g, *inputs)`` with a
GraphContext whose ``original_node`` is None) and neither inlines the forward nor consults a
``prim::PythonOp`` symbolic. Example for the tutorial's MyAddPyOp::

    class MyAddPyOp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return 2 * a + b

        @staticmethod
        def symbolic(g, a, b):
            two = g.op("Constant", value_t=torch.tensor([2.0]))
            return g.op("Add", g.op("Mul", two, a), b)

As a Fixport mapping it also works through the prim::PythonOp dispatcher (op from params).
"""

import torch

from fixport.symbolics.api import default_params, fix


@fix(
    "prim::PythonOp",
    id="autograd.static_symbolic",
    strategy="autograd",
    title="Static symbolic method on the Function",
    description="Shows the Function.symbolic route; as a mapping emits params op_type on the tensor inputs.",
    min_opset=1,
    params={"op_type": {"type": "str", "default": "Identity", "label": "ONNX op type"}},
    notes="Requires editing the model's code; Fixport mappings need no code change.",
    torchscript_only="an autograd.Function reaches the exporter as prim::PythonOp only under TorchScript",
)
def symbolic(g, *inputs):
    tensors = [value for value in inputs if isinstance(value, torch._C.Value)]
    return g.op(params["op_type"], *tensors)


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
