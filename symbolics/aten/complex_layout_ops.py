"""Shape ops on complex tensors (``slice``, ``select``, ``squeeze``, ``transpose``, ``to``).

Schemas: ``aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None,
SymInt step=1)``, ``aten::select.int(Tensor(a) self, int dim, SymInt index)``,
``aten::squeeze.dim(Tensor(a) self, int dim)``, ``aten::transpose.int(Tensor(a) self, int dim0,
int dim1)``, ``aten::to(...)``. A complex tensor is a real one with a
trailing (real, imaginary) axis, so a negative ``dim`` counts one further from the end: the
ONNX op is emitted on the shifted axis. ``to`` between complex dtypes of the same width is the
identity. Nodes without complex tensors are exported by torch's symbolic, unchanged.
(``unsqueeze`` on complex values is ``onnx_function.complex_unsqueeze``, one function for both
exporters.)
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

from fixport.symbolics.api import fix, torch_symbolic


def _is_complex(value):
    value_type = value.type()
    return isinstance(value_type, torch._C.TensorType) and value_type.dtype() is not None \
        and value_type.dtype().is_complex


_END = 9223372036854775807


def _int(value, default=None):
    if value is None or symbolic_helper._is_none(value):
        return default
    found = symbolic_helper._maybe_get_const(value, "i")
    if not isinstance(found, int):
        raise TypeError("a shape op on a complex tensor needs constant arguments")
    return found


def _const(g, values):
    return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))


@fix(
    "aten::slice",
    "aten::select",
    "aten::squeeze",
    "aten::transpose",
    "aten::to",
    id="complex.layout_ops",
    strategy="complex",
    title="slice/select/squeeze/transpose/to on complex tensors",
    description="Shape ops on complex tensors with negative dims shifted past the trailing (real, imaginary) axis.",
    min_opset=13,
    notes="Rotary code indexes its complex frequencies (freqs[:, :, None, :]) before the product.",
    torchscript_only=("falls back to torch's own TorchScript symbolic for real inputs; under dynamo "
                      "torch_lib carries complex tensors itself"),
)
def symbolic(g, self, *args):
    kind = g.original_node.kind()
    if not _is_complex(g.original_node.inputsAt(0)):
        return torch_symbolic(g)(g, self, *args)
    if kind == "aten::to":
        if not _is_complex(g.original_node.output()):
            raise RuntimeError("complex to real: torch drops the imaginary part; not covered")
        return g.op("Identity", self)
    rank = g.original_node.inputsAt(0).type().dim()  # of the complex tensor; the layout has one more axis

    def axis(value):  # a torch dim -> the axis of the (..., 2) layout
        dim = _int(value)
        return dim + (rank if dim < 0 else 0)

    if kind == "aten::squeeze":
        return g.op("Squeeze", self, _const(g, [axis(args[0])]))
    if kind == "aten::select":
        return g.op("Gather", self, _const(g, _int(args[1])), axis_i=axis(args[0]))
    if kind == "aten::slice":
        start, end, step = _int(args[1], 0), _int(args[2], _END), _int(args[3], 1)
        return g.op("Slice", self, _const(g, [start]), _const(g, [end]), _const(g, [axis(args[0])]),
                    _const(g, [step]))
    if kind == "aten::transpose":
        perm = list(range(rank + 1))
        first, second = axis(args[0]), axis(args[1])
        perm[first], perm[second] = perm[second], perm[first]
        return g.op("Transpose", self, perm_i=perm)
    raise RuntimeError(f"{kind} on complex tensors is not covered")
