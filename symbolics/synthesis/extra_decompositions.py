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


# ---- modified Bessel functions of the first kind: Cephes' Chebyshev expansions, as torch has them
# (ATen/native/Math.h), on [0, 8] and beyond.
_I0E_A = (  # 30 coefficients
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (  # 25 coefficients
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7, 2.89137052083475648297E-6,
    6.88975834691682398426E-5, 3.36911647825569408990E-3, 8.04490411014108831608E-1)
_I1E_A = (  # 29 coefficients
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (  # 25 coefficients
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)


def _chbevl(x: torch.Tensor, coefficients: tuple[float, ...]) -> torch.Tensor:
    b0, b1, b2 = torch.full_like(x, coefficients[0]), torch.zeros_like(x), torch.zeros_like(x)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel_scaled(x: torch.Tensor, small: tuple[float, ...], large: tuple[float, ...]) -> torch.Tensor:
    """exp(-|x|) I(|x|) over [0, 8] and (8, inf) (the order's 1/x factor left to the caller)."""
    a = torch.abs(x)
    near = _chbevl(a / 2 - 2, small)
    far = _chbevl(32 / torch.clamp(a, min=8.0) - 2, large) / torch.sqrt(torch.clamp(a, min=8.0))
    return torch.where(a <= 8, near, far)


def i0e(x: torch.Tensor) -> torch.Tensor:
    return _bessel_scaled(x, _I0E_A, _I0E_B)


def i0(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(torch.abs(x)) * i0e(x)


def i1e(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    scaled = _bessel_scaled(x, _I1E_A, _I1E_B)
    value = torch.where(a <= 8, scaled * a, scaled)  # the [0, 8] expansion is of exp(-x) I1(x) / x
    return torch.where(x < 0, -value, value)


def i1(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(torch.abs(x)) * i1e(x)


def spherical_bessel_j0(x: torch.Tensor) -> torch.Tensor:
    """sin(x) / x; its Taylor series near 0, as torch has it, and 0 at infinity."""
    square = x * x
    series = 1 - square / 6 * (1 - square / 20 * (1 - square / 42 * (1 - square / 72 * (1 - square / 110 * (
        1 - square / 156)))))
    value = torch.where(torch.abs(x) < 0.5, series, torch.sin(x) / x)
    return torch.where(torch.isinf(x), torch.zeros_like(x), value)


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
    aten.i0.default: i0,
    aten.special_i0e.default: i0e,
    aten.special_i1.default: i1,
    aten.special_i1e.default: i1e,
    aten.special_modified_bessel_i0.default: i0,
    aten.special_modified_bessel_i1.default: i1,
    aten.special_spherical_bessel_j0.default: spherical_bessel_j0,
    **{getattr(aten, f"special_{prefix}chebyshev_polynomial_{kind}").default: _chebyshev_op(kind, bool(prefix))
       for kind in "tuvw" for prefix in ("", "shifted_")},
}
