"""Small static linear algebra, unrolled over the matrix size, batched over leading dimensions.

LU with partial pivoting (ties to the first row, as in LAPACK), Cholesky and triangular
substitutions: solve, inv, slogdet, lu_factor, lu, lu_solve, cholesky, cholesky_solve,
solve_triangular, triangular_solve, lu_unpack; matrix_exp by scaling and squaring; and small
products and statistics (addbmm, bilinear, cov, corrcoef, dist, pdist); Householder QR with
LAPACK's conventions (geqrf, householder_product, ormqr, qr); eigenvalues and singular values
(no vectors) by Jacobi rotations, and the pseudo-inverse (linalg_pinv) from Jacobi vectors.
Matrices of a few dozen rows; each step is a few ONNX nodes.

Written in plain torch ops for ops torch decomposes into nothing the exporter converts; the
decomposition replay traces them like ``torch._decomp``'s (see
:mod:`fixport.symbolics.synthesis.decomposition`). Add your own the same way:
``LINALG_DECOMPOSITIONS[torch.ops.aten.<op>.<overload>] = function``.
Self-contained (torch only): Fixport's fix script carries this file as it is.
"""
from __future__ import annotations

import math

import torch

aten = torch.ops.aten


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


BLOCK_INVERSE_ROWS = 16  # above this, a triangular solve multiplies by the inverse made by doubling blocks


def _substitute(t: torch.Tensor, b: torch.Tensor, upper: bool, unit: bool) -> torch.Tensor:
    """Solve T X = B for triangular T (..., n, n), reading only its ``upper`` or lower triangle.
    Row by row for a few rows; above BLOCK_INVERSE_ROWS, by T's inverse, whose steps grow with
    log n rather than n (a 64-row solve row by row is hundreds of steps)."""
    n = t.shape[-1]
    if n > BLOCK_INVERSE_ROWS:
        return _triangular_inverse(t, upper, unit) @ b
    if n == 0:
        return b.clone()
    b = b.expand(*torch.broadcast_shapes(t.shape[:-2], b.shape[:-2]), *b.shape[-2:])  # every row's batch alike
    solved: torch.Tensor | None = None  # the rows solved so far, in their places' order
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        row = b[..., i:i + 1, :]
        if solved is not None:
            known = t[..., i:i + 1, i + 1:] if upper else t[..., i:i + 1, :i]
            row = row - known @ solved
        if not unit:
            row = row / t[..., i:i + 1, i:i + 1]
        if solved is None:
            solved = row
        else:
            solved = torch.cat([row, solved], -2) if upper else torch.cat([solved, row], -2)
    return solved


def _triangular_inverse(t: torch.Tensor, upper: bool, unit: bool) -> torch.Tensor:
    """The inverse of triangular T (..., n, n) from its ``upper`` or lower triangle (and a unit
    diagonal where ``unit``), padded to a power of two with the identity while it is inverted."""
    n = t.shape[-1]
    size = 1 << (n - 1).bit_length()
    source = t.mT if upper else t
    if size > n:
        batch = source.shape[:-2]
        source = torch.cat([source, torch.zeros(*batch, n, size - n, dtype=t.dtype)], -1)
        source = torch.cat([source, torch.zeros(*batch, size - n, size, dtype=t.dtype)], -2)
    index = torch.arange(size)
    rows, cols = index.unsqueeze(1), index.unsqueeze(0)
    diagonal, strictly_lower = rows == cols, rows > cols
    zero, one = torch.zeros((), dtype=t.dtype), torch.ones((), dtype=t.dtype)
    lower = torch.where(strictly_lower if unit else strictly_lower | diagonal, source, zero)
    lower = torch.where(diagonal if unit else diagonal & (rows >= n), one, lower)
    inverse = _lower_inverse(lower)[..., :n, :n]
    return inverse.mT if upper else inverse


def _lower_inverse(lower: torch.Tensor) -> torch.Tensor:
    """Inverse of lower-triangular L (..., n, n), n a power of two, by doubling: each step inverts
    every pair of the last step's diagonal blocks at once, [[A, 0], [C, D]]^-1 =
    [[A^-1, 0], [-D^-1 C A^-1, D^-1]] (recursive triangular inversion, as stable as substitution)."""
    n = lower.shape[-1]
    batch = lower.shape[:-2]
    inverse = 1 / _diagonal_blocks(lower, 1)  # (..., n, 1, 1)
    size = 1
    while size < n:
        corners = _diagonal_blocks(lower, 2 * size)[..., size:, :size]
        halves = inverse.reshape(*batch, n // (2 * size), 2, size, size)
        first, second = halves[..., 0, :, :], halves[..., 1, :, :]
        corner = -(second @ corners @ first)
        inverse = torch.cat([torch.cat([first, torch.zeros_like(first)], -1), torch.cat([corner, second], -1)], -2)
        size *= 2
    return inverse.reshape(*batch, n, n)


def _diagonal_blocks(square: torch.Tensor, size: int) -> torch.Tensor:
    """The ``size`` x ``size`` blocks on the diagonal of ``square`` (..., n, n): (..., n // size,
    size, size). Reshapes and one strided slice, which every opset converts (no Diagonal op)."""
    n = square.shape[-1]
    count = n // size
    batch = square.shape[:-2]
    grid = square.reshape(*batch, count, size, count, size).movedim((-3, -1), (-4, -3))  # [row, col, k, k']
    on_diagonal = grid.reshape(*batch, size, size, count * count)[..., ::count + 1]  # k == k'
    return on_diagonal.movedim(-1, -3)


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


def cholesky_inverse(factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """(L L^T)^-1 = L^-T L^-1 from the factor, by triangular substitution against the identity."""
    eye = torch.eye(factor.shape[-1], dtype=factor.dtype).expand_as(factor)
    inverse = _substitute(factor, eye, upper, unit=False)  # L^-1 (or U^-1)
    if upper:  # A = U^T U: A^-1 = U^-1 U^-T
        return torch.matmul(inverse, inverse.transpose(-2, -1))
    return torch.matmul(inverse.transpose(-2, -1), inverse)


def lu_unpack(lu: torch.Tensor, pivots: torch.Tensor, unpack_data: bool = True, unpack_pivots: bool = True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    rows, columns = torch.arange(m).unsqueeze(1), torch.arange(n).unsqueeze(0)
    lower = torch.where(rows > columns, lu, (rows == columns).to(lu.dtype))[..., :, :k]
    upper = torch.where(rows <= columns, lu, torch.zeros_like(lu))[..., :k, :]
    perm = _perm_from_pivots(pivots, m)
    permutation = (perm.unsqueeze(-1) == torch.arange(m)).to(lu.dtype).transpose(-2, -1)
    return permutation, lower, upper


def addbmm(x: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, *, beta=1, alpha=1) -> torch.Tensor:
    product = torch.matmul(batch1, batch2).sum(0)
    return (beta * x if beta != 0 else torch.zeros_like(x)) + alpha * product


def bilinear(x1: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None):
    """x1^T W_o x2 for each output o: two matmuls instead of torch's _trilinear."""
    left = torch.matmul(x1.unsqueeze(-2).unsqueeze(-3), weight)  # (..., out, 1, in2)
    result = torch.matmul(left, x2.unsqueeze(-2).unsqueeze(-1)).squeeze(-1).squeeze(-1)
    return result + bias if bias is not None else result


def cov(x: torch.Tensor, *, correction: int = 1, fweights=None, aweights=None) -> torch.Tensor:
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov with weights is not decomposed")
    observations = x if x.dim() == 2 else x.reshape(1, -1)
    count = observations.shape[-1]
    centered = observations - observations.mean(-1, keepdim=True)
    result = torch.matmul(centered, centered.transpose(-2, -1)) / max(count - correction, 0)
    return result.reshape(()) if x.dim() < 2 else result


def corrcoef(x: torch.Tensor) -> torch.Tensor:
    c = cov(x)
    if c.dim() == 0:
        return c / c
    scale = torch.sqrt(c.diagonal())
    return torch.clamp(c / scale.unsqueeze(1) / scale.unsqueeze(0), -1, 1)


def dist(a: torch.Tensor, b: torch.Tensor, p=2) -> torch.Tensor:
    difference = torch.abs(a - b).reshape(-1)
    if p == 0:
        return (difference != 0).sum().to(difference.dtype)
    if p == math.inf:
        return difference.amax() if difference.numel() else torch.zeros((), dtype=difference.dtype)
    return torch.pow(torch.pow(difference, p).sum(), 1 / p)


def pdist(x: torch.Tensor, p: float = 2) -> torch.Tensor:
    """Distances between every pair of rows i < j, in torch's order."""
    n = x.shape[0]
    first, second = torch.triu_indices(n, n, 1)
    if first.numel() == 0:
        return torch.zeros(0, dtype=x.dtype)
    difference = torch.abs(x[first] - x[second])
    if p == math.inf:
        return difference.amax(-1)
    return torch.pow(torch.pow(difference, p).sum(-1), 1 / p)


def cdist(x1: torch.Tensor, x2: torch.Tensor, p: float = 2.0, compute_mode=None) -> torch.Tensor:
    """The p-norm distance between every row of ``x1`` and every row of ``x2`` (batched)."""
    difference = torch.abs(x1.unsqueeze(-2) - x2.unsqueeze(-3))
    if p == 0:
        return (difference != 0).sum(-1).to(x1.dtype)
    if p == math.inf:
        return difference.amax(-1) if difference.shape[-1] else difference.sum(-1)
    return torch.pow(torch.pow(difference, p).sum(-1), 1 / p)


_EXP_TAYLOR_DEGREE = 18
_EXP_MAX_SQUARINGS = 24  # scales norms up to 2^24; the squarings past what a matrix needs are skipped


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """Scaling and squaring: A / 2^s through a degree-18 Taylor series, then squared s times,
    with s chosen per matrix from its 1-norm (the unneeded squarings select the unsquared value)."""
    n = a.shape[-1]
    norm = torch.abs(a).sum(-2).amax(-1)  # the 1-norm, per matrix
    squarings = torch.clamp(torch.ceil(torch.log2(torch.clamp(norm, min=1e-30))) + 1, 0, _EXP_MAX_SQUARINGS)
    scaled = a / torch.pow(2.0, squarings).unsqueeze(-1).unsqueeze(-1).to(a.dtype)
    identity = torch.eye(n, dtype=a.dtype).expand(a.shape)
    result, term = identity, identity
    for k in range(1, _EXP_TAYLOR_DEGREE + 1):
        term = torch.matmul(term, scaled) / k
        result = result + term
    for step in range(_EXP_MAX_SQUARINGS):
        squared = torch.matmul(result, result)
        result = torch.where((step < squarings).unsqueeze(-1).unsqueeze(-1), squared, result)
    return result


# Eigenvalues of symmetric matrices by cyclic Jacobi rotations (in float64, a fixed number of
# sweeps: quadratic convergence makes 10 ample up to _JACOBI_MAX_SIZE); singular values as the
# square roots of the smaller Gram matrix's eigenvalues. Values only: eigenvector and singular
# vector signs are LAPACK's choice, which a rotation sequence does not reproduce.
_JACOBI_SWEEPS = 10
_JACOBI_MAX_SIZE = 16


def _rotation(eye: torch.Tensor, p: int, q: int, theta: torch.Tensor) -> torch.Tensor:
    """The plane rotation by ``theta`` (per batch) in coordinates p, q: c on both diagonal
    entries, s at (p, q), -s at (q, p)."""
    c, s = torch.cos(theta)[..., None, None], torch.sin(theta)[..., None, None]
    diagonal = eye[p].outer(eye[p]) + eye[q].outer(eye[q])
    return eye + (c - 1) * diagonal + s * (eye[p].outer(eye[q]) - eye[q].outer(eye[p]))


def _jacobi(symmetric: torch.Tensor, vectors: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Cyclic two-sided Jacobi in float64: the rotated (nearly diagonal) matrix and, when asked
    for, the accumulated rotations V (symmetric = V D V^T)."""
    n = symmetric.shape[-1]
    if n > _JACOBI_MAX_SIZE:
        raise NotImplementedError(f"Jacobi eigenvalues are unrolled up to {_JACOBI_MAX_SIZE} x {_JACOBI_MAX_SIZE}")
    a = symmetric.to(torch.float64)
    eye = torch.eye(n, dtype=torch.float64)
    accumulated = eye.expand(a.shape) if vectors else None
    for _ in range(_JACOBI_SWEEPS if n > 1 else 0):
        for p in range(n - 1):
            for q in range(p + 1, n):
                # The angle in float32: ONNX Runtime has no float64 Atan. Each sweep re-aims at what
                # is left off the diagonal, so the angle's rounding does not limit the result.
                theta = 0.5 * torch.atan2((2 * a[..., p, q]).float(), (a[..., q, q] - a[..., p, p]).float()).double()
                rotation = _rotation(eye, p, q, theta)
                a = torch.matmul(torch.matmul(rotation.transpose(-2, -1), a), rotation)
                if vectors:
                    accumulated = torch.matmul(accumulated, rotation)
    return a, accumulated


def _jacobi_eigenvalues(symmetric: torch.Tensor) -> torch.Tensor:
    a, _ = _jacobi(symmetric)
    eye = torch.eye(symmetric.shape[-1], dtype=torch.float64)
    return torch.sort((a * eye).sum(-1), dim=-1)[0]  # the diagonal (the exporter's diagonal emits an If)


def _one_sided_jacobi(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One-sided (Hestenes) Jacobi on the columns of A (..., m, n), in float64: V (n x n) and
    B = A V, whose columns are orthogonal (b_i = sigma_i u_i). Each rotation is the Jacobi rotation
    of the Gram matrix B^T B in coordinates p, q, its three entries recomputed from B's columns:
    the same rotations as two-sided Jacobi on A^T A, but the null space comes out at eps |A|
    rather than eps |A|^2 / sigma_r, so that torch's cutoff (eps max(m, n) sigma_max in float64)
    sorts the singular values as LAPACK does."""
    n = a.shape[-1]
    if n > _JACOBI_MAX_SIZE:
        raise NotImplementedError(f"Jacobi singular vectors are unrolled up to {_JACOBI_MAX_SIZE} columns")
    b = a.to(torch.float64)
    eye = torch.eye(n, dtype=torch.float64)
    v = eye.expand(*a.shape[:-2], n, n)
    for _ in range(_JACOBI_SWEEPS if n > 1 else 0):
        for p in range(n - 1):
            for q in range(p + 1, n):
                column_p, column_q = b[..., :, p], b[..., :, q]
                alpha, beta = (column_p * column_p).sum(-1), (column_q * column_q).sum(-1)
                y, x = 2 * (column_p * column_q).sum(-1), beta - alpha
                # atan2 does not care for the scale: normalise before the float32 angle, so that
                # tiny columns' entries (squared) do not underflow
                scale = torch.abs(y) + torch.abs(x)
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                theta = 0.5 * torch.atan2((y / scale).float(), (x / scale).float()).double()
                rotation = _rotation(eye, p, q, theta)
                b, v = torch.matmul(b, rotation), torch.matmul(v, rotation)
    return v, b


def _not_computed(a: torch.Tensor, rows: int, columns: int, wanted: bool) -> torch.Tensor:
    """Vectors this decomposition does not compute: NaN where they are asked for, so that any
    output that uses them fails the comparison with torch (callers such as svdvals never read them)."""
    if not wanted:
        return torch.zeros(0, dtype=a.dtype)
    return torch.full((*a.shape[:-2], rows, columns), math.nan, dtype=a.dtype)


def _linalg_eigh(a: torch.Tensor, UPLO: str = "L", compute_v: bool = True):
    lower = torch.tril(a) if UPLO == "L" else torch.triu(a).transpose(-2, -1)
    symmetric = lower + torch.tril(lower, -1).transpose(-2, -1)
    n = a.shape[-1]
    return _jacobi_eigenvalues(symmetric).to(a.dtype), _not_computed(a, n, n, compute_v)


def _linalg_svd(a: torch.Tensor, full_matrices: bool = True, compute_uv: bool = True, *, driver=None):
    m, n = a.shape[-2:]
    k = min(m, n)
    wide = a.to(torch.float64)
    gram = torch.matmul(wide, wide.transpose(-2, -1)) if m <= n else torch.matmul(wide.transpose(-2, -1), wide)
    values = torch.sqrt(torch.clamp(_jacobi_eigenvalues(gram), min=0)).flip(-1)
    left = _not_computed(a, m, m if full_matrices else k, compute_uv)
    right = _not_computed(a, n if full_matrices else k, n, compute_uv)
    return left, values.to(a.dtype), right


def _pinv_tolerances(a: torch.Tensor, atol: torch.Tensor | None, rtol: torch.Tensor | None):
    """torch's defaults (float64): atol 0; rtol eps * max(m, n) when neither is given, given
    atol > 0 turns that default rtol to 0."""
    eps = torch.finfo(a.dtype).eps if a.dtype.is_floating_point else torch.finfo(torch.float32).eps
    default = torch.full((), eps * max(a.shape[-2], a.shape[-1]), dtype=torch.float64)
    absolute = atol.to(torch.float64) if atol is not None else torch.zeros((), dtype=torch.float64)
    if rtol is not None:
        relative = rtol.to(torch.float64)
    elif atol is not None:
        relative = torch.where(absolute > 0, torch.zeros_like(default), default)
    else:
        relative = default
    return absolute, relative


def _kept_reciprocal(values: torch.Tensor, magnitude: torch.Tensor, tolerance: torch.Tensor) -> torch.Tensor:
    """1 / values where magnitude > tolerance (per matrix), 0 elsewhere (no 1/0 to multiply by 0)."""
    keep = magnitude > tolerance.unsqueeze(-1)
    return torch.where(keep, 1 / torch.where(keep, values, torch.ones_like(values)), torch.zeros_like(values))


def linalg_pinv(a: torch.Tensor, *, atol: torch.Tensor | None = None, rtol: torch.Tensor | None = None,
                hermitian: bool = False) -> torch.Tensor:
    """The pseudo-inverse from Jacobi rotations, in float64, with torch's cutoff: singular values
    (|eigenvalues| when ``hermitian``) above max(atol, rtol * the largest) are inverted, the rest
    dropped. General A: one-sided Jacobi on the side with fewer columns (A or A^T), A V = B with
    orthogonal columns b_i = sigma_i u_i, so pinv(A) = V diag(1/sigma_i^2) B^T. Hermitian: two-sided
    Jacobi on A's lower triangle (as eigh reads it), pinv = V diag(1/lambda) V^T."""
    m, n = a.shape[-2:]
    absolute, relative = _pinv_tolerances(a, atol, rtol)
    if a.numel() == 0:
        return torch.zeros(*a.shape[:-2], n, m, dtype=a.dtype)
    if hermitian:
        lower = torch.tril(a)
        symmetric = lower + torch.tril(lower, -1).transpose(-2, -1)
        diagonal, vectors = _jacobi(symmetric, vectors=True)
        values = (diagonal * torch.eye(n, dtype=torch.float64)).sum(-1)
        tolerance = torch.maximum(absolute, relative * values.abs().amax(-1))
        inverse = _kept_reciprocal(values, values.abs(), tolerance)
        return torch.matmul(vectors * inverse.unsqueeze(-2), vectors.transpose(-2, -1)).to(a.dtype)
    wide = m < n
    source = a.transpose(-2, -1) if wide else a  # the fewer columns to rotate
    vectors, orthogonal = _one_sided_jacobi(source)
    squares = (orthogonal * orthogonal).sum(-2)  # sigma_i^2
    singular = torch.sqrt(squares)
    tolerance = torch.maximum(absolute, relative * singular.amax(-1))
    inverse = _kept_reciprocal(squares, singular, tolerance)
    result = torch.matmul(vectors * inverse.unsqueeze(-2), orthogonal.transpose(-2, -1))  # pinv(source)
    return (result.transpose(-2, -1) if wide else result).to(a.dtype)


# Householder QR with LAPACK's conventions (dgeqrf/dlarfg: beta = -sign(alpha) |x|, v[0] = 1,
# tau = (beta - alpha) / beta), so Q and R come out as torch's, not merely equivalent.


def geqrf(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = a.shape[-2:]
    rows = torch.arange(m)
    taus = []
    for j in range(min(m, n)):
        alpha, below = a[..., j, j], torch.where(rows > j, a[..., :, j], torch.zeros_like(a[..., :, j]))
        norm = torch.sqrt((below * below).sum(-1))
        beta = -torch.where(alpha >= 0, 1.0, -1.0).to(a.dtype) * torch.sqrt(alpha * alpha + norm * norm)
        reflect = norm > 0
        tau = torch.where(reflect, (beta - alpha) / beta, torch.zeros_like(alpha))
        scale = torch.where(reflect, 1 / (alpha - beta), torch.zeros_like(alpha))
        v = torch.where(rows == j, torch.ones_like(below), below * scale.unsqueeze(-1))  # zero above j
        update = tau[..., None, None] * v.unsqueeze(-1) * torch.matmul(v.unsqueeze(-2), a).squeeze(-2).unsqueeze(-2)
        reflected = a - update
        column = torch.where(rows == j, torch.where(reflect, beta, alpha).unsqueeze(-1),
                             torch.where(rows > j, v, a[..., :, j]))
        a = torch.cat([a[..., :, :j], column.unsqueeze(-1), reflected[..., :, j + 1:]], -1)  # stored v's stay
        taus.append(tau)
    return a, torch.stack(taus, -1) if taus else torch.zeros(*a.shape[:-2], 0, dtype=a.dtype)


def householder_product(a: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """H_1 H_2 ... H_k applied to the first n columns of the identity (orgqr)."""
    m, n = a.shape[-2:]
    rows = torch.arange(m)
    q = torch.eye(m, n, dtype=a.dtype).expand(*a.shape[:-2], m, n)
    for j in reversed(range(tau.shape[-1])):
        v = torch.where(rows == j, torch.ones_like(a[..., :, j]),
                        torch.where(rows > j, a[..., :, j], torch.zeros_like(a[..., :, j])))
        q = q - tau[..., j, None, None] * v.unsqueeze(-1) * torch.matmul(v.unsqueeze(-2), q)
    return q


def ormqr(a: torch.Tensor, tau: torch.Tensor, c: torch.Tensor, left: bool = True, transpose: bool = False):
    m = a.shape[-2]
    full = torch.cat([a, torch.zeros(*a.shape[:-2], m, max(m - a.shape[-1], 0), dtype=a.dtype)], -1)[..., :m]
    q = householder_product(full, tau)  # the m x m Q
    q = q.transpose(-2, -1) if transpose else q
    return torch.matmul(q, c) if left else torch.matmul(c, q)


def linalg_qr(a: torch.Tensor, mode: str = "reduced") -> tuple[torch.Tensor, torch.Tensor]:
    m, n = a.shape[-2:]
    k = min(m, n)
    factors, tau = geqrf(a)
    upper = torch.triu(factors)
    if mode == "r":
        return torch.zeros(0, dtype=a.dtype), upper[..., :k, :]
    if mode == "complete" and m > n:
        return ormqr(factors, tau, torch.eye(m, dtype=a.dtype).expand(*a.shape[:-2], m, m)), upper
    return householder_product(factors[..., :, :k], tau), upper[..., :k, :]


LINALG_DECOMPOSITIONS = {
    aten.linalg_lu_factor_ex.default: linalg_lu_factor_ex,
    aten.linalg_lu.default: linalg_lu,
    aten.linalg_solve_ex.default: linalg_solve_ex,
    aten._linalg_solve_ex.default: _linalg_solve_ex,
    aten.linalg_inv_ex.default: linalg_inv_ex,
    aten.linalg_slogdet.default: linalg_slogdet,
    aten._linalg_slogdet.default: _linalg_slogdet,
    aten._linalg_check_errors.default: _linalg_check_errors,
    aten.linalg_cholesky_ex.default: linalg_cholesky_ex,
    aten.linalg_solve_triangular.default: linalg_solve_triangular,
    aten.triangular_solve.default: triangular_solve,
    aten.cholesky_solve.default: cholesky_solve,
    aten.cholesky_inverse.default: cholesky_inverse,
    aten._cdist_forward.default: cdist,
    aten.linalg_lu_solve.default: linalg_lu_solve,
    aten.lu_unpack.default: lu_unpack,
    aten.addbmm.default: addbmm,
    aten.bilinear.default: bilinear,
    aten.cov.default: cov,
    aten.corrcoef.default: corrcoef,
    aten.dist.default: dist,
    aten._pdist_forward.default: pdist,
    aten.pdist.default: pdist,
    aten.linalg_matrix_exp.default: matrix_exp,
    aten._linalg_eigh.default: _linalg_eigh,
    aten._linalg_svd.default: _linalg_svd,
    aten.linalg_pinv.atol_rtol_tensor: linalg_pinv,
    aten.geqrf.default: geqrf,
    aten.linalg_householder_product.default: householder_product,
    aten.ormqr.default: ormqr,
    aten.linalg_qr.default: linalg_qr,
}
