"""The exported model's weights that are the torch model's own tensors, for ONNX Runtime to share.

An export writes each parameter under its own name, from the same torch tensor. A session that
read those weights again would hold a second copy of them next to torch's (2 GB more for a 0.5 B
model in float32). So each initializer that is a parameter, byte for byte, is handed to ONNX
Runtime as the tensor's own buffer (``SessionOptions.add_initializer``, no copy). Buffers are left
out (a forward may update them in place), and so are initializers an export changed: a folded
transpose keeps no parameter's name, and the first and last bytes are compared to catch the rest.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import torch
from onnx import helper

from fixport.core.onnx_io.external_data import external_place
from fixport.core.onnx_io.onnx_model import OnnxModel

SAMPLE_BYTES = 64  # compared at each end of a tensor


def share_torch_weights(model: OnnxModel, module: object) -> None:
    """Note in ``model.shared`` every initializer that is one of ``module``'s parameters."""
    if not isinstance(module, torch.nn.Module):
        return
    parameters = dict(module.named_parameters(remove_duplicate=False))
    for tensor in model.proto.graph.initializer:
        parameter = parameters.get(tensor.name)
        array = _as_array(parameter, tensor) if parameter is not None else None
        if array is not None and _same_bytes(array, tensor, model):
            model.shared[tensor.name] = array


def _as_array(parameter: torch.Tensor, tensor: onnx.TensorProto) -> np.ndarray | None:
    """The parameter's memory as numpy, when it has the initializer's dtype and shape (else None)."""
    if parameter.device.type != "cpu" or not parameter.is_contiguous() or parameter.dtype == torch.bfloat16:
        return None  # numpy has no bfloat16; ONNX Runtime reads those weights itself
    array = parameter.detach().numpy()
    if list(array.shape) != list(tensor.dims) or helper.np_dtype_to_tensor_dtype(array.dtype) != tensor.data_type:
        return None
    return array


def _same_bytes(array: np.ndarray, tensor: onnx.TensorProto, model: OnnxModel) -> bool:
    raw = array.reshape(-1).view(np.uint8)
    size = raw.size
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        stored = tensor.raw_data
        return len(stored) == size and all(stored[a:b] == raw[a:b].tobytes() for a, b in _ends(size))
    path, offset, length = external_place(tensor, model.base_dir)
    if length != size:
        return False
    with open(path, "rb") as data:
        for start, end in _ends(size):
            data.seek(offset + start)
            if data.read(end - start) != raw[start:end].tobytes():
                return False
    return True


def _ends(size: int) -> Iterator[tuple[int, int]]:
    yield 0, min(SAMPLE_BYTES, size)
    yield max(0, size - SAMPLE_BYTES), size
