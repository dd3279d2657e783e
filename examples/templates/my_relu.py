"""autograd.Function ``MyRelu`` (a ``prim::PythonOp``) as ONNX Relu.

Written for ``examples/autograd_python_op.py``. Forward: ``def forward(ctx, x) -> x.clamp(min=0)``.
A fix naming the Function becomes its static ``symbolic`` for the export: torch calls
it as ``symbolic(g, x)`` and keeps inlining every other Function. A fix for one node
goes through Fixport's ``prim::PythonOp`` dispatcher instead, which picks it by Function name.
Tensor inputs arrive as Values, other ``forward`` arguments as Python values.
"""

from fixport.symbolics.api import fix


@fix(
    "prim::PythonOp[MyRelu]",
    id="autograd.my_relu",
    strategy="autograd",
    title="MyRelu -> Relu",
    description="Relu(x).",
    min_opset=6,
    notes="Same as the tutorial's dispatcher branch for MyRelu.",
    torchscript_only="an autograd.Function reaches the exporter as prim::PythonOp only under TorchScript",
)
def symbolic(g, x):
    return g.op("Relu", x)
