"""numpy arrays as torch tensors, bfloat16 included.

numpy has no bfloat16: onnx's ``numpy_helper`` and ONNX Runtime give ``ml_dtypes.bfloat16``
arrays, and ``torch.from_numpy`` refuses them ("can't convert np.ndarray of type
ml_dtypes.bfloat16"). Their bits are torch's bfloat16 bits, so they cross as a 16-bit view.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

# ml_dtypes' formats that torch has too, with the unsigned type of their width.
_ML_DTYPES_IN_TORCH: dict[Any, tuple[Any, torch.dtype]] = {
    np.dtype(ml_dtypes.bfloat16): (np.uint16, torch.bfloat16),
    np.dtype(ml_dtypes.float8_e4m3fn): (np.uint8, torch.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e5m2): (np.uint8, torch.float8_e5m2),
}


def tensor_from_array(array: Any) -> torch.Tensor:
    """A torch tensor of ``array``'s values and dtype (a copy-free view where numpy allows)."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # not np.ascontiguousarray alone: it makes a 0-d array 1-d
        array = np.ascontiguousarray(array)
    bits = _ML_DTYPES_IN_TORCH.get(array.dtype)
    if bits is None:
        return torch.from_numpy(array)
    width, dtype = bits
    return torch.from_numpy(array.view(width)).view(dtype)
