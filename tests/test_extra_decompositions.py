"""Fixport's own decompositions (symbolics/synthesis/extra_*.py) against torch, eagerly.

The replay traces these functions, so each must compute what the ATen op computes; `fix --auto`
on them is covered in tests/test_synthesis.py.
"""
from __future__ import annotations

import pytest
import torch

from fixport.symbolics.synthesis.decomposition import extra_decompositions

aten = torch.ops.aten
EXTRA_DECOMPOSITIONS = extra_decompositions()
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
        **_linear_algebra(generator),
        aten.scatter_reduce.two: ((torch.randn(10, 5, generator=generator), 0,
                                   torch.randint(0, 10, (5, 5), generator=generator), x[:, :5].repeat(2, 1)[:5],
                                   "amax"), {"include_self": False}),
        aten.squeeze.dims: (x[None, :, None], [0, 2, -1]),
        **_indexing(generator, x),
        aten.index_reduce.default: ((x, 1, torch.tensor([5, 0, 5]), x[:, :3], "prod"), {"include_self": True}),
        **{op: (x * 4,) for op in (aten.i0.default, aten.special_i0e.default, aten.special_i1.default,
                                   aten.special_i1e.default, aten.special_modified_bessel_i0.default,
                                   aten.special_modified_bessel_i1.default, aten.special_spherical_bessel_j0.default)},
        **{op: (positive * 2,) for op in (aten.special_modified_bessel_k0.default,
                                           aten.special_modified_bessel_k1.default,
                                           aten.special_scaled_modified_bessel_k0.default,
                                           aten.special_scaled_modified_bessel_k1.default)},
        # the rational approximations up to 5 and the asymptotic forms beyond; Y is -inf at 0, NaN below
        aten.special_bessel_j0.default: (x * 4,), aten.special_bessel_j1.default: (x * 4,),
        **{op: (torch.cat([positive * 4, x * 4, torch.zeros(1, 7)]),)
           for op in (aten.special_bessel_y0.default, aten.special_bessel_y1.default)},
        aten.special_airy_ai.default: (torch.cat([x.reshape(-1) * 3, torch.linspace(-10, 10, 41)]),),  # split: +-2.09
        # every branch of torch's: the series, the continued fraction, the asymptotic series near a = x > 20; zeros
        **{op: (torch.tensor([0.0, 1e-3, 0.3, 1.0, 2.5, 7.0, 19.0, 24.0, 48.0])[:, None],
                torch.tensor([0.0, 1e-3, 0.4, 1.05, 1.5, 3.0, 10.0, 22.0, 30.0, 55.0]))
           for op in (aten.igamma.default, aten.igammac.default)},
        **{getattr(aten, f"special_{prefix}chebyshev_polynomial_{kind}").default: (
            (x + 1) / 2 if prefix else x / 2, torch.randint(-1, 14, (4, 7), generator=generator).float())
           for kind in "tuvw" for prefix in ("", "shifted_")},
        **{getattr(aten, f"special_{name}_polynomial_{kind}").default: (
            x / 2, torch.randint(-1, 30, (4, 7), generator=generator).float())
           for name, kind in (("hermite", "h"), ("hermite", "he"), ("laguerre", "l"), ("legendre", "p"))},
    }


def _indexing(generator: torch.Generator, x: torch.Tensor) -> dict:
    signed_zeros = torch.tensor([0.0, -0.0, 1.5, -2.0, 8.0, 0.5, float("inf")])
    ordered = torch.sort(torch.randn(3, 7, generator=generator))[0]
    sparse = torch.where(x > 0.5, x, torch.zeros_like(x))
    return {
        aten.copysign.Tensor: (signed_zeros.flip(0), signed_zeros),
        aten.frexp.Tensor: (torch.cat([x.reshape(-1) * 100, signed_zeros]),),
        aten.searchsorted.Tensor: ((ordered, x[:3, :4]), {"right": True}),
        aten.index_fill.int_Scalar: (x, 1, torch.tensor([1, 3]), 2.5),
        aten.index_fill.int_Tensor: (x, 0, torch.tensor([2]), torch.tensor(-1.0)),
        aten.nonzero_static.default: ((sparse,), {"size": 9}),
        aten.median.default: (torch.where(x > 3, torch.nan, x),),
        aten.nanmedian.default: (torch.where(x > 2, torch.nan, x),),
        aten.mode.default: (torch.randint(0, 4, (3, 7), generator=generator).float(), 0, True),
        aten.histogram.bin_ct: ((x, 5), {"weight": x.abs(), "density": True}),
        aten._histogramdd_bin_edges.default: ((x[:, :3], [2, 3, 2]), {"range": [-1.0, 1.0, -2.0, 2.0, 0.0, 3.0]}),
        aten._histogramdd_from_bin_cts.default: ((x[:, :3], [2, 3, 2]), {"density": True}),
        aten.segment_reduce.default: ((x[0], "max"), {"lengths": torch.tensor([0, 3, 4]), "initial": -1.0}),
        aten.diagonal_scatter.default: (x[None].expand(2, 4, 7), x[:2, :4], 1, 1, 2),
        aten.put.default: (x, torch.tensor([0, -1, 9, 9]), torch.tensor([1.0, 2.0, 3.0, 4.0]), True),
        aten.adaptive_max_pool2d.default: (x.reshape(1, 2, 2, 7), [2, 3]),
        aten.adaptive_max_pool3d.default: (torch.randn(1, 2, 3, 5, 4, generator=generator), [2, 2, 3]),
    }


def _linear_algebra(generator: torch.Generator) -> dict:
    square, rectangle = torch.randn(2, 5, 5, generator=generator), torch.randn(3, 5, generator=generator)
    right = torch.randn(2, 5, 3, generator=generator)
    definite = square @ square.mT + torch.eye(5)
    factors, pivots = torch.linalg.lu_factor(square)
    return {
        aten.linalg_lu_factor_ex.default: (rectangle.mT,), aten.linalg_lu.default: (rectangle,),
        aten.linalg_solve_ex.default: (square, right[..., 0]), aten._linalg_solve_ex.default: (square, right),
        aten.linalg_inv_ex.default: (square,), aten.linalg_slogdet.default: (square,),
        aten._linalg_slogdet.default: (square,), aten.linalg_cholesky_ex.default: ((definite,), {"upper": True}),
        aten.linalg_solve_triangular.default: ((definite, right), {"upper": False}),  # reads one triangle
        aten.triangular_solve.default: (right, definite, True, True),
        aten.cholesky_solve.default: (right, torch.linalg.cholesky(definite)),
        aten.cholesky_inverse.default: (torch.linalg.cholesky(definite, upper=True), True),
        aten._cdist_forward.default: (square, right.mT.contiguous(), 1.5, None),
        aten.linalg_lu_solve.default: (factors, pivots, right),
        aten.lu_unpack.default: (factors, pivots),
        aten.addbmm.default: ((square[0], square, square), {"beta": 0.5, "alpha": 2}),
        aten.bilinear.default: (rectangle[:, :4], rectangle, square[:, :4], right[0, 0, :2]),
        aten.cov.default: (rectangle,), aten.corrcoef.default: (rectangle,),
        aten.dist.default: (square, definite[:2], 3), aten._pdist_forward.default: (rectangle.mT.contiguous(), 1.5),
        aten.pdist.default: (rectangle,), aten.linalg_matrix_exp.default: (square,),
        aten._linalg_eigh.default: (square, "U", False),  # values only: vectors come back NaN
        aten._linalg_svd.default: (rectangle, False, False),
        aten.linalg_pinv.atol_rtol_tensor: ((right @ rectangle,), {"hermitian": False}),  # rank 3, batched 5 x 5
        aten.geqrf.default: (rectangle.mT,), aten.linalg_qr.default: (rectangle, "complete"),
        aten.linalg_householder_product.default: tuple(torch.geqrf(rectangle.mT)),
        aten.ormqr.default: (*torch.geqrf(square[0]), right[0], True, True),
        aten._linalg_check_errors.default: ((torch.zeros(2, dtype=torch.int32), "linalg.solve"), {"is_matrix": True}),
    }


@pytest.mark.parametrize("op", list(EXTRA_DECOMPOSITIONS), ids=str)
def test_extra_decomposition_computes_what_torch_computes(op) -> None:
    arguments, keywords = _inputs()[op], {}
    if len(arguments) == 2 and isinstance(arguments[1], dict):  # (positional, keyword-only)
        arguments, keywords = arguments
    expected, actual = op(*arguments, **keywords), EXTRA_DECOMPOSITIONS[op](*arguments, **keywords)
    if expected is None:  # _linalg_check_errors: torch checks, the graph has nothing to emit
        assert actual is None
        return
    expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)  # Tensor[]: a list
    actual = tuple(actual) if isinstance(actual, (tuple, list)) else (actual,)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        if not want.dtype.is_floating_point:
            assert torch.equal(got, want)
            continue
        same = (got == want) | (torch.isnan(got) & torch.isnan(want))  # infinities included
        error = ((got.double() - want.double()).abs() / (1 + want.double().abs()))[~same]
        assert error.numel() == 0 or error.max().item() <= RELATIVE_TOLERANCE


def test_every_extra_decomposition_is_tested() -> None:
    assert set(_inputs()) == set(EXTRA_DECOMPOSITIONS)


def test_vectors_that_are_not_computed_are_nan_so_no_comparison_can_pass() -> None:
    square = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))
    values, vectors = EXTRA_DECOMPOSITIONS[aten._linalg_eigh.default](square, "L", True)
    assert torch.allclose(values, torch.linalg.eigvalsh(square), atol=1e-5)
    assert vectors.shape == (4, 4) and torch.isnan(vectors).all()
    left, singular, right = EXTRA_DECOMPOSITIONS[aten._linalg_svd.default](square[:3], False, True)
    assert torch.allclose(singular, torch.linalg.svdvals(square[:3]), atol=1e-5)
    assert left.shape == (3, 3) and right.shape == (3, 4) and torch.isnan(left).all() and torch.isnan(right).all()


@pytest.mark.parametrize(("upper", "unit", "left"), [(False, True, True), (False, False, True),
                                                     (True, False, True), (True, True, False)])
def test_a_large_triangular_solve_goes_by_its_inverse_and_matches_torch(upper: bool, unit: bool, left: bool) -> None:
    """Above BLOCK_INVERSE_ROWS rows the solve multiplies by the inverse made by doubling blocks
    (40 rows: padded to 64 while inverted); it reads only the triangle asked for."""
    generator = torch.Generator().manual_seed(0)
    square = torch.randn(2, 40, 40, generator=generator)
    definite = square @ square.mT / 40 + torch.eye(40)
    right = torch.randn(2, 40, 3, generator=generator)
    right = right if left else right.mT
    solve = EXTRA_DECOMPOSITIONS[aten.linalg_solve_triangular.default]
    expected = torch.linalg.solve_triangular(definite, right, upper=upper, unitriangular=unit, left=left)
    actual = solve(definite, right, upper=upper, left=left, unitriangular=unit)
    error = (actual.double() - expected.double()).abs() / (1 + expected.double().abs())
    assert error.max().item() <= RELATIVE_TOLERANCE


def test_a_large_triangular_solve_traces_to_steps_that_grow_with_log_n() -> None:
    """Qwen3-Next solves 64-row systems: row by row that traced to ~700 steps (and an ONNX node or
    more each); by the inverse, ~200."""
    from torch.fx.experimental.proxy_tensor import make_fx

    solve = EXTRA_DECOMPOSITIONS[aten.linalg_solve_triangular.default]
    system, right = torch.randn(1, 4, 64, 64).tril(-1) * 0.1, torch.randn(1, 4, 64, 16)
    traced = make_fx(lambda a, b: solve(a, b, upper=False, unitriangular=True))(system, right)
    steps = [n for n in traced.graph.nodes if n.op == "call_function"]
    assert len(steps) < 250
    expected = torch.linalg.solve_triangular(system, right, upper=False, unitriangular=True)
    torch.testing.assert_close(traced(system, right), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [4, 20])
def test_a_triangular_solve_broadcasts_batch_dims_as_torch_does(rows: int) -> None:
    """A unit-diagonal system batched 3 times with one right-hand side: every row's batch alike."""
    generator = torch.Generator().manual_seed(0)
    system = torch.randn(3, rows, rows, generator=generator) * 0.1
    right = torch.randn(1, rows, 2, generator=generator)
    solve = EXTRA_DECOMPOSITIONS[aten.linalg_solve_triangular.default]
    expected = torch.linalg.solve_triangular(system, right, upper=False, unitriangular=True)
    torch.testing.assert_close(solve(system, right, upper=False, unitriangular=True), expected)
