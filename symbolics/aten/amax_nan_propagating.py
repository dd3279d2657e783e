"""``aten::amax`` / ``aten::amin`` that return NaN where the reduced slice holds one, as torch does.

Schema: ``aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor`` (``amin`` alike).
ONNX Runtime's ReduceMax/ReduceMin skip NaN, so a sensor gap or an overflow disappears from the
result; torch propagates it. Reduce as before, then Where(any IsNaN, NaN, reduced). One ONNX
function for both exporters.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import default_params, fix


def _reduce(operation, value, dim, keepdim):
    if not dim:
        return operation(value, keepdims=int(keepdim))
    return operation(value, op.Constant(value_ints=list(dim)), keepdims=int(keepdim))


@fix(
    "aten::amax.default",
    "aten::amin.default",
    id="onnx_function.amax_nan_propagating",
    strategy="onnx_function",
    title="amax/amin that propagate NaN",
    description="ReduceMax/ReduceMin, with NaN wherever the reduced slice has a NaN (torch's semantics).",
    min_opset=9,
    params={"kind": {"type": "str", "default": "aten::amax", "doc": "the op it fixes (Fixport sets it)"}},
    notes="Integer inputs hold no NaN: they reduce as plain ReduceMax/ReduceMin.",
)
def symbolic(self, dim: list = (), keepdim: bool = False):
    dim = [dim] if isinstance(dim, int) else list(dim)
    reduced = _reduce(op.ReduceMin if "amin" in params["kind"] else op.ReduceMax, self, dim, keepdim)
    if self.dtype is not None and not self.dtype.is_floating_point():
        return reduced
    has_nan = _reduce(op.ReduceMax, op.Cast(op.IsNaN(self), to=1), dim, keepdim)  # 1: FLOAT
    zero = op.Sub(reduced, reduced)
    return op.Where(op.Cast(has_nan, to=9), op.Div(zero, zero), reduced)  # 9: BOOL; 0/0 is NaN in self's type


# The defaults of the params above; Fixport replaces them with the values set for this fix.
params = default_params(symbolic)
