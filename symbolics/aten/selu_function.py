"""``aten::selu`` as an onnxscript function embedded with ``g.onnxscript_op`` (tutorial).

Schema: ``aten::selu(Tensor self) -> Tensor``. The function's FunctionProto is saved in the
model (``torch.onnx.export`` adds it because the function is in the symbolic registry while
exporting) and ``custom_opsets`` must carry its domain, so ONNX Runtime runs it.
"""

import onnxscript
from onnxscript.onnx_opset import opset15 as op

from fixport.symbolics.api import fix

custom_opset = onnxscript.values.Opset(domain="custom-onnx-script", version=1)


@onnxscript.script(custom_opset)
def Selu(X):
    alpha = 1.6732632423543772
    gamma = 1.0507009873554805
    alphaX = op.CastLike(alpha, X)
    gammaX = op.CastLike(gamma, X)
    neg = gammaX * (alphaX * op.Exp(X) - alphaX)
    pos = gammaX * X
    zeroX = op.CastLike(0, X)
    return op.Where(X <= zeroX, neg, pos)


@fix(
    "aten::selu",
    id="onnxscript.selu_function",
    strategy="onnxscript",
    title="SELU as an embedded onnxscript function",
    description="Embed an onnxscript Selu function (domain custom-onnx-script) via g.onnxscript_op.",
    min_opset=15,
    custom_opsets={"custom-onnx-script": 1},
    notes="CastLike needs opset 15. torch_lib's own traced functions carry no body; this one is scripted.",
    torchscript_only="shows g.onnxscript_op, TorchScript's way to embed a scripted onnxscript function in the graph",
)
def symbolic(g, x):
    return g.onnxscript_op(Selu, x).setType(x.type())
