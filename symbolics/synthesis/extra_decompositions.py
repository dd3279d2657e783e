"""Fixport's decompositions of ATen ops that torch decomposes into nothing the exporter converts.

Written in plain torch ops, they are traced and converted by the decomposition replay exactly
like ``torch._decomp``'s (``EXTRA_DECOMPOSITIONS`` is added to its table). Two kinds:

- scans and order statistics along one axis of static size n (cummax, cumprod, kthvalue,
  median, ...) as an n x n lower-triangular mask and one reduction, or a sort: exact, O(n^2);
- small static linear algebra (LU with partial pivoting, Cholesky, triangular solves) unrolled
  over the matrix size;
- special functions by their textbook numerics (Lanczos ``lgamma``, the asymptotic series of
  ``digamma``, Euler-Maclaurin for the Hurwitz zeta and ``polygamma``, Giles' ``erfinv`` with
  a Newton step): accurate to float32 rounding on ordinary inputs, not bit-exact.

Add your own the same way: ``EXTRA_DECOMPOSITIONS[torch.ops.aten.<op>.<overload>] = function``.
Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _lower_triangle(n: int) -> torch.Tensor:
    """mask[i, j] = j <= i: row i sees the prefix that ends at i."""
    positions = torch.arange(n)
    return positions.unsqueeze(1) >= positions.unsqueeze(0)


def _prefix_rows(x: torch.Tensor, dim: int, fill: float) -> tuple[torch.Tensor, torch.Tensor]:
    """x moved so ``dim`` is last, repeated as rows (..., n, n) where row i holds x[..., :i+1] and
    ``fill`` elsewhere; and the mask."""
    last = x.movedim(dim, -1)
    mask = _lower_triangle(last.shape[-1])
    return torch.where(mask, last.unsqueeze(-2), torch.full((), fill, dtype=x.dtype)), mask


def _lowest(dtype: torch.dtype) -> float:
    return -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min


def _scan_extreme(x: torch.Tensor, dim: int, largest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    fill = _lowest(x.dtype) if largest else -_lowest(x.dtype)
    rows, mask = _prefix_rows(x, dim, fill)
    values = rows.amax(-1) if largest else rows.amin(-1)
    # torch keeps the last position that reaches the running extreme
    hits = (rows == values.unsqueeze(-1)) & mask
    indices = torch.where(hits, torch.arange(rows.shape[-1]), -1).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def cummax(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _scan_extreme(x, dim, largest=True)


def cummin(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _scan_extreme(x, dim, largest=False)


def logcumsumexp(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dim() == 0:
        return x.clone()
    rows, _ = _prefix_rows(x, dim, -math.inf)
    top = rows.amax(-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top)  # all -inf rows stay -inf
    return (torch.log(torch.exp(rows - top).sum(-1)) + top.squeeze(-1)).movedim(-1, dim)


def cumprod(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    x = x.to(dtype) if dtype is not None else x
    if x.dim() == 0:
        return x.clone()
    rows, _ = _prefix_rows(x, dim, 1)
    return rows.prod(-1).movedim(-1, dim)


def _order_statistic(x: torch.Tensor, position: torch.Tensor | int, dim: int,
                     keepdim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The value at sorted ``position`` along ``dim`` and where it was."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    ordered, order = torch.sort(x, dim=dim)
    if isinstance(position, int):
        position = torch.full_like(ordered.narrow(dim, 0, 1), position, dtype=torch.int64)
    values, indices = ordered.gather(dim, position), order.gather(dim, position)
    return (values, indices) if keepdim else (values.squeeze(dim), indices.squeeze(dim))


def kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return _order_statistic(x, k - 1, dim, keepdim)


def median_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    size = x.shape[dim] if x.dim() else 1
    return _order_statistic(x, (size - 1) // 2, dim, keepdim)  # torch's median is the lower one


def nanmedian_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    counted = (~torch.isnan(x)).sum(dim, keepdim=True)  # sort puts NaN last: the median of the rest
    return _order_statistic(x, torch.clamp(counted - 1, min=0) // 2, dim, keepdim)


def fmax(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, torch.maximum(a, b)))


def fmin(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(a), b, torch.where(torch.isnan(b), a, torch.minimum(a, b)))


def hypot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(a * a + b * b)


_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61503916999185, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _lgamma_right(z: torch.Tensor) -> torch.Tensor:
    """log|Gamma(z)| for z >= 0.5 (Lanczos)."""
    z = z - 1
    series = torch.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * torch.log(t) - t + torch.log(series)


def lgamma(x: torch.Tensor) -> torch.Tensor:
    left = x < 0.5
    right = _lgamma_right(torch.where(left, 1 - x, x))
    # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    reflected = math.log(math.pi) - torch.log(torch.abs(torch.sin(math.pi * x))) - right
    return torch.where(left, reflected, right)


_DIGAMMA_SHIFT = 6
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132)  # Bernoulli terms of the asymptotic series


def _digamma_right(x: torch.Tensor) -> torch.Tensor:
    """digamma(x) for x > 0: shift past 6, then the asymptotic series."""
    total = torch.zeros_like(x)
    for k in range(_DIGAMMA_SHIFT):
        total = total + 1 / (x + k)
    y = x + _DIGAMMA_SHIFT
    inverse_square = 1 / (y * y)
    series, power = torch.zeros_like(x), inverse_square
    for coefficient in _DIGAMMA_SERIES:
        series = series + coefficient * power
        power = power * inverse_square
    return torch.log(y) - 0.5 / y - series - total


def digamma(x: torch.Tensor) -> torch.Tensor:
    left = x <= 0
    right = _digamma_right(torch.where(left, 1 - x, x))
    reflected = right - math.pi / torch.tan(math.pi * x)  # digamma(1 - x) - pi cot(pi x)
    result = torch.where(left, reflected, right)
    return torch.where(x == 0, torch.full_like(x, -math.inf), result)


_ZETA_TERMS = 9  # terms summed before the Euler-Maclaurin tail, for q > 0
_POLYGAMMA_TERMS = 30  # polygamma sums from x itself, which may be negative: accurate for x > -20
_BERNOULLI_OVER_FACTORIAL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000)


def _hurwitz_zeta(s: torch.Tensor, q: torch.Tensor, terms: int = _ZETA_TERMS) -> torch.Tensor:
    """sum over k >= 0 of (q + k)^-s for s > 1: ``terms`` terms, then the Euler-Maclaurin tail
    (which needs q + terms well above zero)."""
    total = torch.zeros_like(q + s)
    for k in range(terms):
        total = total + torch.pow(q + k, -s)
    a = q + terms
    total = total + torch.pow(a, 1 - s) / (s - 1) + 0.5 * torch.pow(a, -s)
    rising, power = s, torch.pow(a, -s - 1)
    for j, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL):
        total = total + coefficient * rising * power
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
        power = power / (a * a)
    return total


def zeta(s: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    result = _hurwitz_zeta(s, q)
    result = torch.where(s == 1, torch.full_like(result, math.inf), result)
    return torch.where((s < 1) | (q <= 0), torch.full_like(result, math.nan), result)


def polygamma(n: int, x: torch.Tensor) -> torch.Tensor:
    if n == 0:
        return digamma(x)
    scale = (-1) ** (n + 1) * math.factorial(n)
    return scale * _hurwitz_zeta(torch.full_like(x, n + 1.0), x, _POLYGAMMA_TERMS)


_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _polynomial(coefficients: tuple[float, ...], w: torch.Tensor) -> torch.Tensor:
    result = torch.full_like(w, coefficients[0])
    for c in coefficients[1:]:
        result = result * w + c
    return result


def erfinv(y: torch.Tensor) -> torch.Tensor:
    """Giles' single-precision approximation, then one Newton step on erf."""
    w = -torch.log((1 - y) * (1 + y))
    central = _polynomial(_ERFINV_CENTRAL, w - 2.5)
    tail = _polynomial(_ERFINV_TAIL, torch.sqrt(w) - 3)
    x = torch.where(w < 5, central, tail) * y
    x = x - (torch.erf(x) - y) / (2 / math.sqrt(math.pi) * torch.exp(-x * x))
    edge = torch.where(y > 0, torch.full_like(y, math.inf), torch.full_like(y, -math.inf))
    x = torch.where(torch.abs(y) == 1, edge, x)
    return torch.where(torch.abs(y) > 1, torch.full_like(y, math.nan), x)


def ndtri(p: torch.Tensor) -> torch.Tensor:
    return math.sqrt(2) * erfinv(2 * p - 1)


# ---- small static linear algebra: LU with partial pivoting, Cholesky and substitutions, unrolled
# over the (static) matrix size; batched over leading dimensions. Pivot ties go to the first row,
# as in LAPACK.


def _swap_order(rows: torch.Tensor, j: int, p: torch.Tensor) -> torch.Tensor:
    """Row order that swaps row j with row p (per batch)."""
    p = p.unsqueeze(-1)
    return torch.where(rows == j, p, torch.where(rows == p, torch.full_like(rows, j), rows))


def _lu(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """L (m x k, unit diagonal), U (k x n), the row order ``perm`` (A[perm] = L U) and the
    0-based LAPACK pivots (k), for A of shape (..., m, n), k = min(m, n)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    rows = torch.arange(m).expand(*batch, m)
    u, lower, perm, pivots = a, torch.zeros(*batch, m, k, dtype=a.dtype), rows, []
    for j in range(k):
        p = u[..., j:, j].abs().argmax(-1) + j
        pivots.append(p)
        order = _swap_order(rows, j, p)
        u = u.gather(-2, order.unsqueeze(-1).expand(u.shape))
        lower = lower.gather(-2, order.unsqueeze(-1).expand(lower.shape))
        perm = perm.gather(-1, order)
        factors = u[..., j + 1:, j:j + 1] / u[..., j:j + 1, j:j + 1]
        u = torch.cat([u[..., :j + 1, :], u[..., j + 1:, :] - factors * u[..., j:j + 1, :]], -2)
        column = torch.cat([torch.zeros(*batch, j, 1, dtype=a.dtype), torch.ones(*batch, 1, 1, dtype=a.dtype),
                            factors], -2)
        lower = torch.cat([lower[..., :j], column, lower[..., j + 1:]], -1)
    stacked = torch.stack(pivots, -1) if pivots else torch.zeros(*batch, 0, dtype=torch.int64)
    return lower, u[..., :k, :], perm, stacked


def _substitute(t: torch.Tensor, b: torch.Tensor, upper: bool, unit: bool) -> torch.Tensor:
    """Solve T X = B for triangular T (..., n, n), reading only its ``upper`` or lower triangle."""
    n = t.shape[-1]
    solved: dict[int, torch.Tensor] = {}
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        row = b[..., i:i + 1, :]
        for j, known in solved.items():
            row = row - t[..., i:i + 1, j:j + 1] * known
        solved[i] = row if unit else row / t[..., i:i + 1, i:i + 1]
    if not solved:
        return b.clone()
    return torch.cat([solved[i] for i in range(n)], -2)


def _is_vector_rhs(a: torch.Tensor, b: torch.Tensor) -> bool:
    return b.dim() == 1 or (b.dim() == a.dim() - 1 and b.shape == a.shape[:-1])


def _compact_lu(lower: torch.Tensor, upper: torch.Tensor, m: int, n: int) -> torch.Tensor:
    """LAPACK's single matrix: U on and above the diagonal, L's multipliers below."""
    batch, k = upper.shape[:-2], upper.shape[-2]
    padded_l = torch.cat([lower, torch.zeros(*batch, m, n - k, dtype=lower.dtype)], -1)
    padded_u = torch.cat([upper, torch.zeros(*batch, m - k, n, dtype=upper.dtype)], -2)
    strictly_lower = torch.arange(m).unsqueeze(1) > torch.arange(n).unsqueeze(0)
    return torch.where(strictly_lower, padded_l, padded_u)


def _lu_solve_perm(lower, upper, perm, b: torch.Tensor) -> torch.Tensor:
    permuted = b.gather(-2, perm.unsqueeze(-1).expand(*perm.shape, b.shape[-1]))
    return _substitute(upper, _substitute(lower, permuted, upper=False, unit=True), upper=True, unit=False)


def _info(a: torch.Tensor) -> torch.Tensor:
    return torch.zeros(a.shape[:-2], dtype=torch.int32)


def linalg_lu_factor_ex(a: torch.Tensor, pivot: bool = True, check_errors: bool = False):
    lower, upper, _, pivots = _lu(a)
    m, n = a.shape[-2:]
    return _compact_lu(lower, upper, m, n), (pivots + 1).to(torch.int32), _info(a)


def linalg_lu(a: torch.Tensor, pivot: bool = True):
    lower, upper, perm, _ = _lu(a)
    m = a.shape[-2]
    # A = P L U with P[perm[i], i] = 1
    permutation = (perm.unsqueeze(-1) == torch.arange(m)).to(a.dtype).transpose(-2, -1)
    return permutation, lower, upper


def _linalg_solve_ex(a: torch.Tensor, b: torch.Tensor, left: bool = True, check_errors: bool = False):
    vector = _is_vector_rhs(a, b)
    rhs = b.unsqueeze(-1) if vector else b
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, rhs = a.transpose(-2, -1), rhs.transpose(-2, -1)
    lower, upper, perm, pivots = _lu(a)
    result = _lu_solve_perm(lower, upper, perm, rhs)
    result = result if left else result.transpose(-2, -1)
    n = a.shape[-1]
    return ((result.squeeze(-1) if vector else result), _compact_lu(lower, upper, n, n),
            (pivots + 1).to(torch.int32), _info(a))


def linalg_solve_ex(a: torch.Tensor, b: torch.Tensor, left: bool = True, check_errors: bool = False):
    result, _, _, info = _linalg_solve_ex(a, b, left, check_errors)
    return result, info


def linalg_inv_ex(a: torch.Tensor, check_errors: bool = False):
    identity = torch.eye(a.shape[-1], dtype=a.dtype).expand(a.shape)
    return linalg_solve_ex(a, identity)[0], _info(a)


def linalg_slogdet(a: torch.Tensor):
    _, upper, _, pivots = _lu(a)
    diagonal = upper.diagonal(dim1=-2, dim2=-1)
    swaps = (pivots != torch.arange(pivots.shape[-1])).sum(-1)
    sign = torch.sign(diagonal).prod(-1) * (1 - 2 * (swaps % 2)).to(a.dtype)
    return sign, torch.log(diagonal.abs()).sum(-1)


def _linalg_slogdet(a: torch.Tensor):
    sign, logabsdet = linalg_slogdet(a)
    factors, pivots, _ = linalg_lu_factor_ex(a.transpose(-2, -1))  # torch factors A^T (column-major LAPACK)
    return sign, logabsdet, factors, pivots


def _linalg_check_errors(info: torch.Tensor, api_name: str, *, is_matrix: bool) -> None:
    """torch raises on a failed factorization; an exported graph has no way to: nothing to emit."""


def _perm_from_pivots(pivots: torch.Tensor, m: int) -> torch.Tensor:
    """LAPACK's sequential 1-based row swaps as the row order ``perm`` (A[perm] = L U)."""
    rows = torch.arange(m).expand(*pivots.shape[:-1], m)
    perm = rows
    for j in range(pivots.shape[-1]):
        perm = perm.gather(-1, _swap_order(rows, j, pivots[..., j].long() - 1))
    return perm


def linalg_lu_solve(lu: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, *, left: bool = True,
                    adjoint: bool = False) -> torch.Tensor:
    n = lu.shape[-1]
    strictly_lower = torch.arange(n).unsqueeze(1) > torch.arange(n).unsqueeze(0)
    lower = torch.where(strictly_lower, lu, torch.eye(n, dtype=lu.dtype))
    upper = torch.where(strictly_lower, torch.zeros_like(lu), lu)
    perm = _perm_from_pivots(pivots, n)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return linalg_lu_solve(lu, pivots, b.transpose(-2, -1), adjoint=not adjoint).transpose(-2, -1)
    if not adjoint:
        return _lu_solve_perm(lower, upper, perm, b)
    # A^T X = B with A[perm] = L U: U^T L^T (X[perm]) = B
    middle = _substitute(upper.transpose(-2, -1), b, upper=False, unit=False)
    solved = _substitute(lower.transpose(-2, -1), middle, upper=True, unit=True)
    inverse = torch.argsort(perm, dim=-1)
    return solved.gather(-2, inverse.unsqueeze(-1).expand(solved.shape))


def linalg_cholesky_ex(a: torch.Tensor, upper: bool = False, check_errors: bool = False):
    n = a.shape[-1]
    source = a.transpose(-2, -1) if upper else a  # LAPACK reads the triangle it is asked for
    columns: list[torch.Tensor] = []
    for j in range(n):
        done = torch.stack(columns, -1) if columns else torch.zeros(*a.shape[:-1], 0, dtype=a.dtype)
        pivot = torch.sqrt(source[..., j, j] - (done[..., j, :] ** 2).sum(-1))
        below = (source[..., j + 1:, j] - (done[..., j + 1:, :] * done[..., j:j + 1, :]).sum(-1)) / \
            pivot.unsqueeze(-1)
        columns.append(torch.cat([torch.zeros(*a.shape[:-2], j, dtype=a.dtype), pivot.unsqueeze(-1), below], -1))
    lower = torch.stack(columns, -1) if columns else a.clone()
    return (lower.transpose(-2, -1) if upper else lower), _info(a)


def linalg_solve_triangular(a: torch.Tensor, b: torch.Tensor, *, upper: bool, left: bool = True,
                            unitriangular: bool = False) -> torch.Tensor:
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _substitute(a.transpose(-2, -1), b.transpose(-2, -1), not upper, unitriangular).transpose(-2, -1)
    return _substitute(a, b, upper, unitriangular)


def triangular_solve(b: torch.Tensor, a: torch.Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    t = a.transpose(-2, -1) if transpose else a
    return _substitute(t, b, upper != transpose, unitriangular), a.clone()


def cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    lower = factor.transpose(-2, -1) if upper else factor
    middle = _substitute(lower, b, upper=False, unit=False)
    return _substitute(lower.transpose(-2, -1), middle, upper=True, unit=False)


# ---- Chebyshev polynomials T, U, V, W (and the shifted ones, of 2x - 1) of a tensor degree n:
# torch's recurrence for degrees up to _CHEBYSHEV_RECURRENCE, closed forms beyond (trigonometric
# inside [-1, 1], hyperbolic outside), which is what the recurrence converges to.
_CHEBYSHEV_RECURRENCE = 8
_CHEBYSHEV_START = {"t": (1.0, 0.0), "u": (2.0, 0.0), "v": (2.0, -1.0), "w": (2.0, 1.0)}  # p1 = a x + b


def _chebyshev_closed(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    theta = torch.acos(torch.clamp(x, -1.0, 1.0))
    inside = {"t": torch.cos(n * theta), "u": torch.sin((n + 1) * theta) / torch.sin(theta),
              "v": torch.cos((n + 0.5) * theta) / torch.cos(theta / 2),
              "w": torch.sin((n + 0.5) * theta) / torch.sin(theta / 2)}[kind]
    t = torch.acosh(torch.clamp(torch.abs(x), min=1.0))
    odd = torch.remainder(n, 2) == 1
    flip = torch.where((x < 0) & odd, -1.0, 1.0).to(x.dtype)
    grows, half = {"t": (torch.cosh(n * t), None), "u": (torch.sinh((n + 1) * t) / torch.sinh(t), None),
                   "v": (torch.cosh((n + 0.5) * t) / torch.cosh(t / 2), torch.sinh((n + 0.5) * t) / torch.sinh(t / 2)),
                   "w": (torch.sinh((n + 0.5) * t) / torch.sinh(t / 2),
                         torch.cosh((n + 0.5) * t) / torch.cosh(t / 2))}[kind]
    outside = grows if half is None else torch.where(x > 0, grows, half)  # V(-x) = (-1)^n W(x)
    return torch.where(torch.abs(x) < 1, inside, flip * outside)


def _chebyshev_at_one(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """torch's values at x = +-1 (where the closed forms divide by zero)."""
    odd = torch.remainder(n, 2) == 1
    sign = torch.where(odd, -1.0, 1.0).to(x.dtype)
    positive, negative = {"t": (torch.ones_like(n), sign), "u": (n + 1, sign * (n + 1)),
                          "v": (torch.ones_like(n), sign * (2 * n + 1)), "w": (2 * n + 1, sign)}[kind]
    return torch.where(x > 0, positive, negative)


def _chebyshev(kind: str, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    n = torch.trunc(torch.as_tensor(n, dtype=x.dtype))
    a, b = _CHEBYSHEV_START[kind]
    previous, current = torch.ones_like(x), a * x + b
    result = torch.where(n == 0, previous, _chebyshev_closed(kind, x, n))
    result = torch.where(n == 1, current, result)
    for degree in range(2, _CHEBYSHEV_RECURRENCE + 1):
        previous, current = current, 2 * x * current - previous
        result = torch.where(n == degree, current, result)
    result = torch.where(torch.abs(x) == 1, _chebyshev_at_one(kind, x, n), result)
    return torch.where(n < 0, torch.zeros_like(result), result)


def _chebyshev_op(kind: str, shifted: bool):
    def polynomial(x, n):
        x, n = torch.as_tensor(x), torch.as_tensor(n)
        dtype = torch.promote_types(x.dtype, n.dtype)
        x = x.to(dtype)
        return _chebyshev(kind, 2 * x - 1 if shifted else x, n.to(dtype))
    return polynomial


EXTRA_DECOMPOSITIONS = {
    aten.cummax.default: cummax,
    aten.cummin.default: cummin,
    aten.logcumsumexp.default: logcumsumexp,
    aten.cumprod.default: cumprod,
    aten.kthvalue.default: kthvalue,
    aten.median.dim: median_dim,
    aten.nanmedian.dim: nanmedian_dim,
    aten.fmax.default: fmax,
    aten.fmin.default: fmin,
    aten.hypot.default: hypot,
    aten.lgamma.default: lgamma,
    aten.digamma.default: digamma,
    aten.polygamma.default: polygamma,
    aten.special_zeta.default: zeta,
    aten.erfinv.default: erfinv,
    aten.special_ndtri.default: ndtri,
    aten.linalg_lu_factor_ex.default: linalg_lu_factor_ex,
    aten.linalg_lu.default: linalg_lu,
    aten.linalg_solve_ex.default: linalg_solve_ex,
    aten._linalg_solve_ex.default: _linalg_solve_ex,
    aten.linalg_inv_ex.default: linalg_inv_ex,
    aten.linalg_slogdet.default: linalg_slogdet,
    aten.linalg_cholesky_ex.default: linalg_cholesky_ex,
    aten.linalg_solve_triangular.default: linalg_solve_triangular,
    aten.triangular_solve.default: triangular_solve,
    aten.cholesky_solve.default: cholesky_solve,
    aten._linalg_slogdet.default: _linalg_slogdet,
    aten._linalg_check_errors.default: _linalg_check_errors,
    aten.linalg_lu_solve.default: linalg_lu_solve,
    **{getattr(aten, f"special_{prefix}chebyshev_polynomial_{kind}").default: _chebyshev_op(kind, bool(prefix))
       for kind in "tuvw" for prefix in ("", "shifted_")},
}
