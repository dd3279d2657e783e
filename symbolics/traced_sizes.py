"""Reading the size and dim arguments of an op from the TorchScript trace (the FFT templates use it).

kornia and others compute FFT sizes from tensor shapes (``x.shape[-1] + k // 2``): at export time
those arrive as graph values, but the trace still knows the static shapes they came from. Torch
only: Fixport's fix script carries this file as it is.
"""

import torch
from torch.onnx._internal.torchscript_exporter import symbolic_helper

_ARITHMETIC = {"aten::add": lambda a, b, alpha=1: a + alpha * b, "aten::sub": lambda a, b, alpha=1: a - alpha * b,
               "aten::mul": lambda a, b: a * b, "aten::floor_divide": lambda a, b: a // b}


def traced_int(value):
    """An int the trace computed from static shapes (kornia pads to x.shape[-1] + k // 2), else None."""
    node = value.node()
    if node.kind() == "prim::Constant":
        found = value.toIValue()
        found = found.item() if isinstance(found, torch.Tensor) else found
        return int(found) if isinstance(found, (int, float)) else None
    if node.kind() == "aten::size":
        sizes, dim = node.inputsAt(0).type().sizes(), traced_int(node.inputsAt(1))
        return sizes[dim] if sizes and dim is not None else None
    if node.kind() in ("aten::Int", "prim::NumToTensor", "aten::ScalarImplicit"):
        return traced_int(node.inputsAt(0))
    if node.kind() in _ARITHMETIC:
        operands = [traced_int(v) for v in node.inputs()]
        return None if None in operands else int(_ARITHMETIC[node.kind()](*operands))
    return None


def traced_int_list(g, value, index):
    """The ints of an optional int-list argument, read from the trace: a constant, or sizes the
    model computed from static shapes."""
    if value is None or symbolic_helper._is_none(value):
        return None
    traced = g.original_node.inputsAt(index)
    if traced.node().kind() == "prim::Constant":
        found = traced.toIValue()
        if found is None:
            return None
        return [int(v) for v in found] if isinstance(found, (list, tuple)) else [int(found)]
    items = list(traced.node().inputs()) if traced.node().kind() == "prim::ListConstruct" else [traced]
    ints = [traced_int(item) for item in items]
    if any(v is None for v in ints):
        raise RuntimeError("the FFT sizes are computed at run time; a static shape is needed")
    return ints
