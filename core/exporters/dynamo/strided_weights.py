"""Folded weights written through one contiguous copy each.

onnxscript's optimizer folds a Transpose of a weight into a new initializer that is a strided numpy
view. numpy writes such an array element by element, the longest part of saving a real-size
model; one contiguous copy, made as the tensor is written and dropped after, writes at disk speed."""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

# numpy integer types of each item size: torch copies them (bytes unchanged) where numpy's own
# copy of an ml_dtypes array (bfloat16, float8) walks it element by element too.
_SAME_SIZE_INTEGERS = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def write_contiguously(graph: Any) -> int:
    """Replace each initializer of ``graph`` (an ONNX IR graph) held as a strided numpy array by a
    lazy tensor that makes it contiguous when written. Returns how many were replaced."""
    replaced = 0
    for value in graph.initializers.values():
        tensor = value.const_value
        array = getattr(tensor, "raw", None)
        if not isinstance(array, np.ndarray) or array.flags.c_contiguous or array.size == 0:
            continue
        value.const_value = ir.LazyTensor(partial(_contiguous, array, tensor.dtype), dtype=tensor.dtype,
                                          shape=tensor.shape, name=tensor.name, doc_string=tensor.doc_string)
        replaced += 1
    return replaced


def _contiguous(array: np.ndarray, dtype: ir.DataType) -> ir.Tensor:
    return ir.Tensor(contiguous_copy(array), dtype=dtype)


def contiguous_copy(array: np.ndarray) -> np.ndarray:
    """``array``'s values in C order, the same dtype; copied by torch where it can take the strides."""
    integer = _SAME_SIZE_INTEGERS.get(array.dtype.itemsize)
    if integer is None or array.dtype.hasobject or any(stride < 0 for stride in array.strides):
        return np.ascontiguousarray(array)
    as_integers = torch.from_numpy(array.view(integer))
    return as_integers.contiguous().numpy().view(array.dtype)
