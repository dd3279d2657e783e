"""Fixport's own decompositions (symbolics/synthesis/extra_decompositions.py) against torch, eagerly.

The replay traces these functions, so each must compute what the ATen op computes; `fix --auto`
on them is covered in tests/test_synthesis.py.
"""
from __future__ import annotations

import pytest
import torch

from fixport.symbolics.synthesis.extra_decompositions import EXTRA_DECOMPOSITIONS

aten = torch.ops.aten
RELATIVE_TOLERANCE = 1e-5


def _inputs() -> dict:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, generator=generator) * 3
    positive = torch.rand(4, 7, generator=generator) * 5 + 0.05
    unit = torch.rand(64, generator=generator) * 1.98 - 0.99
    return {
        aten.cummax.default: (x, 1), aten.cummin.default: (x, 0), aten.logcumsumexp.default: (x, 1),
        aten.cumprod.default: (x, 1), aten.kthvalue.default: (x, 3, 1), aten.median.dim: (x, 1),
        aten.nanmedian.dim: (torch.where(x > 2, torch.nan, x), 1, True),
        aten.fmax.default: (torch.where(x > 2, torch.nan, x), x.flip(0)),
        aten.fmin.default: (x, torch.where(x < 0, torch.nan, x.flip(1))), aten.hypot.default: (x, x.flip(0)),
        aten.lgamma.default: (x,), aten.digamma.default: (x,), aten.polygamma.default: (3, x),
        aten.special_zeta.default: (positive + 1.1, positive), aten.erfinv.default: (unit,),
        aten.special_ndtri.default: ((unit + 1) / 2,),
    }


@pytest.mark.parametrize("op", list(EXTRA_DECOMPOSITIONS), ids=str)
def test_extra_decomposition_computes_what_torch_computes(op) -> None:
    arguments = _inputs()[op]
    expected, actual = op(*arguments), EXTRA_DECOMPOSITIONS[op](*arguments)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        if not want.dtype.is_floating_point:
            assert torch.equal(got, want)
            continue
        both_nan = torch.isnan(got) & torch.isnan(want)
        error = ((got.double() - want.double()).abs() / (1 + want.double().abs()))[~both_nan]
        assert error.numel() == 0 or error.max().item() <= RELATIVE_TOLERANCE


def test_every_extra_decomposition_is_tested() -> None:
    assert set(_inputs()) == set(EXTRA_DECOMPOSITIONS)
