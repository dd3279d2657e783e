"""Grouped matmul for MoE experts: every row times its group's matrix, the group chosen by ``offs``.

Schemas: ``aten::_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None,
ScalarType? out_dtype=None) -> Tensor``, and transformers' ``grouped_mm_fallback(input, weight,
offs)``, which computes the same with a Python loop over ``offs.tolist()`` (so torch.export
cannot look inside it). Covers the 2-D x 3-D ragged case MoE layers use (``self`` (S, K) sorted
by expert, ``mat2`` (E, K, N), ``offs`` the cumulative row ends) and the plain batched case
without ``offs``. Every row is multiplied by every expert and the right product kept (E times the
FLOPs of the ragged kernel; exact). One ONNX function for both exporters.
"""

from onnxscript.onnx_opset import opset18 as op

from fixport.symbolics.api import fix


def _ints(values):
    return op.Constant(value_ints=list(values))


@fix(
    "aten::_grouped_mm.default",
    "transformers::grouped_mm_fallback.default",
    id="onnx_function.grouped_mm",
    strategy="onnx_function",
    title="grouped matmul via MatMul over all groups + select",
    description="Multiply each row by every group's matrix and keep the one its offs range names.",
    min_opset=13,
    notes="Rows past the last offset come out as zeros; a bias is not covered.",
)
def symbolic(self, mat2, offs=None, bias=None, out_dtype: int = -1):
    if bias is not None:
        raise ValueError("grouped matmul with a bias is not covered")
    if offs is None:
        return op.MatMul(self, mat2)
    every = op.MatMul(op.Unsqueeze(self, _ints([0])), mat2)  # (E, S, N)
    rows = op.Range(op.Constant(value_int=0), op.Gather(op.Shape(self), op.Constant(value_int=0), axis=0),
                    op.Constant(value_int=1))
    ends = op.Cast(offs, to=7)  # INT64
    # the group of row s: how many group ends are <= s
    group = op.ReduceSum(op.Cast(op.LessOrEqual(op.Unsqueeze(ends, _ints([0])), op.Unsqueeze(rows, _ints([1]))),
                                 to=7), _ints([1]), keepdims=0)  # (S,)
    experts = op.Range(op.Constant(value_int=0), op.Gather(op.Shape(mat2), op.Constant(value_int=0), axis=0),
                       op.Constant(value_int=1))
    mask = op.Equal(op.Unsqueeze(experts, _ints([1])), op.Unsqueeze(group, _ints([0])))  # (E, S)
    selected = op.Unsqueeze(mask, _ints([2]))  # (E, S, 1)
    weights = op.Cast(selected, to=self.dtype) if self.dtype is not None else op.CastLike(selected, self)
    return op.ReduceSum(op.Mul(every, weights), _ints([0]), keepdims=0)
