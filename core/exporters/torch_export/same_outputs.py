"""Whether two runs give the same outputs, to float rounding."""
from __future__ import annotations

from typing import Any

import torch


def same_outputs(expected: Any, got: Any) -> bool:
    """Whether two runs of a model (or of a function) give the same outputs, to float rounding."""
    if isinstance(expected, torch.Tensor):
        return isinstance(got, torch.Tensor) and expected.shape == got.shape and torch.allclose(
            expected, got, rtol=1e-5, atol=1e-6, equal_nan=True)
    if isinstance(expected, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(expected) == len(got) and all(map(same_outputs, expected, got))
    if isinstance(expected, dict):
        return isinstance(got, dict) and expected.keys() == got.keys() \
            and all(same_outputs(expected[key], got[key]) for key in expected)
    return expected == got
