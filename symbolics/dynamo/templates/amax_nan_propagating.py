"""``aten::amax`` that returns NaN where the reduced slice holds one, as torch does.

Schema: ``aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor``. ONNX
Runtime's ReduceMax skips NaN; torch's amax propagates it. Where(any IsNaN, NaN, ReduceMax).
"""

from onnxscript import ir
from onnxscript.onnx_opset import opset18 as op

TEMPLATE = {
    "id": "dynamo.amax_nan_propagating",
    "title": "amax that propagates NaN",
    "description": "ReduceMax, with NaN wherever the reduced slice has a NaN (torch's semantics).",
    "family": "dynamo_translation",
    "fits": ["aten::amax.default"],
    "min_opset": 18,
    "max_opset": None,
    "params": {},
    "runs_in_onnxruntime": True,
    "custom_opsets": {},
    "notes": "Floating-point inputs only (integers have no NaN: plain ReduceMax).",
}

# The defaults from TEMPLATE; Fixport replaces them with the values set for this fix.
params = {name: spec["default"] for name, spec in TEMPLATE["params"].items()}


def _reduce(operation, value, dim, keepdim):
    if not dim:
        return operation(value, keepdims=int(keepdim))
    return operation(value, op.Constant(value_ints=list(dim)), keepdims=int(keepdim))


def symbolic(self, dim: list = (), keepdim: bool = False):
    dim = [dim] if isinstance(dim, int) else list(dim)
    peak = _reduce(op.ReduceMax, self, dim, keepdim)
    nan_count = _reduce(op.ReduceSum, op.Cast(op.IsNaN(self), to=ir.DataType.FLOAT), dim, keepdim)
    has_nan = op.Greater(nan_count, op.Constant(value_float=0.0))
    return op.Where(has_nan, op.CastLike(op.Constant(value_float=float("nan")), self), peak)
