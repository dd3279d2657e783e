"""Any op exported by torch's own symbolic, its tensor inputs cast to the dtypes torch traced them with.

Schema: ``<any>(Tensor self, ...) -> Tensor``. The TorchScript exporter types the ONNX values itself,
and its type promotion can make a value float64 that torch computed in float32 (Deformable DETR's
sampling grid: reference points from ``linspace`` divided by a size, promoted to double where they
are added). The ONNX node then gets a mix of types no ONNX Runtime kernel takes: GridSample with a
float input and a double grid. Casting every tensor input back to the dtype it had in torch's
trace gives the node torch's own types; an input already of that type gets a Cast ONNX Runtime
removes; a floating-point input whose traced dtype is unknown goes to the first tensor input's type.
Constant and non-tensor arguments are passed as they are (symbolics read them as numbers).
"""

import torch
from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper

from fixport.symbolics.api import fix, torch_symbolic


def _as_traced(g, value, traced, fallback):
    """``value`` cast to ``traced``'s dtype (to ``fallback``, the first tensor input's type, for a
    floating-point value where the trace did not record one)."""
    if not isinstance(value, torch._C.Value) or symbolic_helper._is_none(value) \
            or symbolic_helper._is_constant(value):
        return value
    traced_type = traced.type() if traced is not None else None
    if isinstance(traced_type, torch._C.TensorType) and traced_type.dtype() is not None:
        target = _type_utils.JitScalarType.from_dtype(traced_type.dtype())
    elif symbolic_helper._is_fp(value) and fallback is not None:
        target, traced_type = fallback, None
    else:
        return value
    cast = g.op("Cast", value, to_i=target.onnx_type())
    if traced_type is not None:
        cast.setType(traced_type)
    return cast


@fix(
    "*",
    id="standard.inputs_as_traced",
    strategy="kernel_types",
    title="inputs cast to torch's own dtypes",
    description=("torch's symbolic for the op, each tensor input first cast to the dtype torch traced it "
                 "with (a node ONNX Runtime has no kernel for at the exporter's promoted types)."),
    min_opset=1,
    notes="For 'Could not find an implementation for X node': a float64 grid beside a float32 input.",
    torchscript_only="re-runs torch's own TorchScript symbolic for the node, with its inputs cast to the traced dtypes",
)
def symbolic(g, *args, **kwargs):
    traced = list(g.original_node.inputs())
    first = next((a for a in args if isinstance(a, torch._C.Value) and symbolic_helper._is_fp(a)), None)
    fallback = _type_utils.JitScalarType.from_value(first) if first is not None else None
    cast = [_as_traced(g, value, traced[index] if index < len(traced) else None, fallback)
            for index, value in enumerate(args)]
    return torch_symbolic(g)(g, *cast, **kwargs)
