"""Pivoted Cholesky factors for GP regression's statistics: of the rows' Gram matrix ``W =
V V'`` while a pass keeps its rows (fewer rows than features:
:meth:`rfcli.learn.gpr.Reduced.from_rows`), of ``G = V'V`` when it summed them
(:class:`rfcli.learn.gpr.Reduced`), and the numerical rank of features on rows (the exact
route's cost model, rfcli.jobs.gpr_exact_route).  Formed by blocks of candidate pivots
(docs/gpr.md, What it costs; docs/methods.md); the products run in the fixed tiles of
rfcli.learn.tiles, so the factor is the same on any number of threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import product

import numpy as np

from rfcli.learn.tiles import column_sq_norms, gram_columns, rows_product

#: rows taken as pivot candidates at once by :func:`_pivoted_cholesky` (the rows' factor
#: and G's), the least share of the largest other residual a candidate's pivot must reach,
#: and the share of the rows whose columns may be formed as candidates before the rest is
#: factored at once
PIVOT_BLOCK, PIVOT_GUARD, PIVOT_FINISH = 64, 1e-3, 0.5
#: ... once the blocks have taken fewer than 1 / PIVOT_SPARSE of the candidates screened:
#: then the rows left are alike (clusters of near-equal rows, blocks of one pivot each),
#: and the columns of all of them at once cost less than a block after block, each a pass
#: over the features for a few columns
PIVOT_SPARSE = 8
#: the exact kernel's factor that serves as the rows' basis (kernel_pivoted_cholesky, for
#: rfcli.learn.gpr.Reduced.from_rows) stops at BASIS_SLACK x the trace the features'
#: envelope may leave out (in the exact kernel's units): a projection on its span leaves
#: out much less than the factor's residual, and the fewest columns that meet the trace are
#: kept (ggplot2::txhousing's last level: rank 627, its span leaving 3.9e-5 of 6.9e-4, 563
#: kept, where the rows' own factor has 578; at 10x rank 603, the same 563 kept, but
#: ggplot2::wage --ard's level fell short, 2.1e-3 of 1.6e-3, and factored its rows' own)
BASIS_SLACK = 3.0


@dataclass(frozen=True)
class FeatureWeights:
    """How a factor weighs its features (:class:`rfcli.learn.gpr.Reduced`): by
    ``envelope`` w (m,), an upper bound of the feature weights ``D(ell) / s^2`` over a box
    of lengthscales, so that what the factor leaves out of ``V diag(w) V'`` bounds what it
    leaves out of ``V D V' / s^2`` anywhere in the box; and ``points`` (p, m), the feature
    weights at points of the box (its corners and centre: :func:`box_weights`), which set
    the threshold's scale: the least over them of the largest weighted diagonal entry
    ``max_k D_k g_k`` (g the features' squared column norms), the scale of the kernel
    matrix there, where the envelope's largest entry ``max_k w_k g_k`` would be the whole
    box's (up to 4.3x larger, at a Matern 5/2 box's short corner; on the Gaussian ARD test
    of tests/learn/test_gpr_factor.py that threshold's factor was 14x further from the
    dense likelihood than the unweighted one, 1.7e-3 against 1.2e-4 nats)."""

    envelope: np.ndarray
    points: np.ndarray

    def scale(self, g: np.ndarray) -> float:
        """The threshold's scale for the features' squared column norms g."""
        return float(np.min(np.max(self.points * g, axis=1)))


def box_weights(fmap, ranges: np.ndarray) -> FeatureWeights:
    """:class:`FeatureWeights` of a fitted Gauss-Legendre map (its ``weight_envelope`` and
    ``weights``) over the lengthscale box ``ranges`` (n_ell x 2): the envelope, and the
    weights at the box's 2^n_ell corners and its geometric centre."""
    r = np.asarray(ranges, dtype=np.float64).reshape(-1, 2)
    corners = [np.array(c) for c in product(*r)] + [np.sqrt(r[:, 0] * r[:, 1])]
    d = fmap.n_inputs_
    points = [fmap.weights(np.broadcast_to(c, (d,)) if len(r) == 1 else c) for c in corners]
    return FeatureWeights(fmap.weight_envelope(r), np.array(points))


def rows_pivoted_cholesky(
    V: np.ndarray, rel_tol: float, weights: FeatureWeights | None = None,
    trace_tol: float = 0.0,
):  # fmt: skip
    """A pivoted Cholesky factor F (n x r) of the rows' Gram matrix ``W = V V'`` (with
    ``weights``, of ``V diag(w) V'`` for their envelope w), rows in their order, and its
    rank r, stopped where every residual diagonal entry is at most
    :class:`rfcli.learn.gpr.Reduced`'s threshold (``rel_tol`` x the largest diagonal entry
    of ``G = V'V``, the largest squared column norm; with weights, x their
    :meth:`FeatureWeights.scale`), or earlier, where the residual's trace (the sum of the
    residual diagonal) is at most ``trace_tol`` > 0 (:meth:`rfcli.learn.gpr.Reduced.from_rows`:
    the trace over the noise is what log det K can lose, and about what the data term's
    noise loses; :func:`rfcli.learn.gpr.factor_nats` estimates the whole): (F, r, the
    residual's trace), (None, 0, 0.0) for features without signal.

    Left-looking and by blocks, so that only the pivots' columns of W are formed (``V
    V_p'``: 2 n m r flops, where forming W costs n^2 m and its factor by LAPACK's dpstrf,
    which holds one thread, another 0.3 s at 3,000 rows): the PIVOT_BLOCK rows of the
    largest residual diagonal are the candidates; their own block of W (``V_c diag(w)
    V_c'``, 2 c^2 m flops) less ``F_c F_c'`` is factored by Cholesky with complete
    pivoting (dpstrf; Higham, "Accuracy and Stability of Numerical Algorithms", SIAM 2002,
    section 10.3), which takes them as pivots while a pivot exceeds both the threshold and
    PIVOT_GUARD x the largest residual of the rows outside the block; then the pivots'
    residual columns ``V V_p' - F F_p'`` are formed, and the new columns of F are those
    through the block's triangular factor (ggplot2::diamonds ARD's second level, 11,232
    features on 3,000 rows, rank 237: 258 columns formed where every candidate's took 448;
    its factor 0.56-0.63 -> 0.40-0.47 s with OpenBLAS's Haswell kernels, about the same
    with its AVX-512 ones, where a block's pass over V costs as much as its products).  The
    guard keeps the factor's entries within 1/sqrt(PIVOT_GUARD) of their pivot's
    (complete pivoting keeps them within 1): without it, a row outside the block far above
    a small pivot took rounding errors of 1e-16 to 0.07 in a residual (ggplot2::diamonds'
    5,018 features on 3,000 rows, 128 candidates).  Blocks take few pivots where the rows
    of the largest residuals are alike (clusters of near-duplicate rows, features of
    nearly full rank): once the candidates screened would pass PIVOT_FINISH x n while
    fewer than 1 / PIVOT_SPARSE of them became pivots, the rest is factored at once, W's
    columns of the rows left by row tiles and dpstrf of their residual
    (:func:`_finish_factor`; clusters of near-equal rows gave blocks of one pivot each).
    Blocks that keep taking their candidates go on; where the rank comes near n that costs
    more than forming W (2,000 rows of 4,000 rough features, rank 1,413: 0.8 s against
    0.3-0.5 s before the pivots were chosen on the candidates' block), a case the GP's cost
    model usually sends to the exact GP instead (rfcli.jobs.gpr_exact_route)."""
    n, m = V.shape
    if not V.size:
        return None, 0, 0.0
    w = None if weights is None else envelope_of(weights)
    g = column_sq_norms(V)
    top = float(np.max(g)) if w is None else weights.scale(g)
    if not top > 0:
        return None, 0, 0.0
    d = np.einsum("ij,ij->i", V, V) if w is None else np.einsum("ij,ij,j->i", V, V, w)
    columns = partial(gram_columns, V, weights=w)
    # a block of candidates S: ``V_S diag(w) V_S'``, 2 k^2 m flops where its columns take
    # 2 n k m
    block = lambda rows: gram_columns(V[rows], np.arange(len(rows)), w)  # noqa: E731
    F, r, _, left = _pivoted_cholesky(d, columns, rel_tol * top, min(n, m), trace_tol, block)
    return F, r, max(float(left.sum()), 0.0)


def kernel_pivoted_cholesky(X: np.ndarray, kernel: str, ell, rel_tol: float,
                            trace_tol: float):  # fmt: skip
    """A pivoted Cholesky factor F (n x r) of the exact kernel matrix ``K(X, X)`` (unit
    variance, lengthscales ``ell``: one, or one per input), rows in their order, and r:
    stopped where every residual diagonal entry is at most ``rel_tol`` or the residual's
    trace at most ``trace_tol`` (:func:`_pivoted_cholesky`).  Its columns are the kernel's
    own, O(n d) each, where a factor of the features' Gram matrix forms ``V V_p'``, O(n m)
    each: the basis of :meth:`rfcli.learn.gpr.Reduced.from_rows` (``basis``), checked
    there on the features themselves."""
    from rfcli.maps.exact import correlation, scaled_sq_dists

    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    if not n:
        return None, 0
    columns = lambda rows: correlation(kernel, scaled_sq_dists(X, X[rows], ell))  # noqa: E731
    block = lambda rows: correlation(kernel, scaled_sq_dists(X[rows], X[rows], ell))  # noqa: E731
    F, r, _, _ = _pivoted_cholesky(np.ones(n), columns, rel_tol, n, trace_tol, block)
    return F, r


def gram_pivoted_cholesky(
    G: np.ndarray, rel_tol: float, weights: FeatureWeights | None = None, trace_tol: float = 0.0
):  # fmt: skip
    """The same factor of a symmetric positive semidefinite matrix of which G holds the
    upper triangle (``G = V'V`` of a pass that summed its rows; what lies below the
    diagonal is not read), its threshold ``rel_tol`` x G's largest diagonal entry: (F m x r,
    rows in their order; r; the pivots in order, ``F[pivots]`` lower triangular; the
    residual's weighted trace, below, or 0.0).  The candidates' columns are G's own, so a
    block costs only the residual's product ``F F_c'`` (2 m r c flops, m r^2 in all, on the
    tile threads), where LAPACK's dpstrf takes about m^2 r on one thread
    (ggplot2::faithfuld's level, 2,286 features: the fit's factor step 0.15-0.26 -> 0.12-0.13
    s, rank 1,202 against dpstrf's 1,189).

    ``weights`` (their envelope w) and ``trace_tol`` > 0: the candidates are the features
    of the largest weighted residual ``w_k E_kk`` (E the residual G - F F'), and the factor
    stops once ``sum_k w_k E_kk``, what it leaves of the rows' ``V diag(w) V'`` (the
    pivoted Cholesky factor of V'V is Gram-Schmidt on V's columns in pivot order: E = R'R
    for V's part R off the pivots' span, and ``tr(R diag(w) R') = sum_k w_k E_kk``), is at
    most ``trace_tol``: the rows' factor's rule (:func:`rows_pivoted_cholesky`) for rows
    that were summed.  The factor itself stays unweighted (the pivots' threshold, the blocks'
    complete pivoting and the guard as without weights): no division by small weights,
    which had cost a factor of the weighted G 100x the unweighted factor's distance to the
    dense likelihood (rfcli.learn.gpr.GPStats.reduced).  ggplot2::faithfuld's level: rank
    1,202 -> 1,064 for the noise/signal 3.9e-6 its starts expected."""
    G = np.asarray(G, dtype=np.float64)
    m = len(G)
    d = np.array(np.diag(G)) if m else np.zeros(0)
    if not m or not float(d.max()) > 0:
        return None, 0, np.zeros(0, dtype=np.intp), 0.0
    w = None if weights is None else envelope_of(weights)
    trace_tol = trace_tol if w is not None else 0.0
    tol = rel_tol * float(d.max())
    F, r, piv, left = _pivoted_cholesky(d, partial(_upper_columns, G), tol, m,
                                        trace_tol, score=w if trace_tol > 0 else None)  # fmt: skip
    return F, r, piv, (max(float(left @ w), 0.0) if w is not None else 0.0)


def envelope_of(weights: FeatureWeights) -> np.ndarray:
    """The envelope as float64, checked: finite and non-negative (a NaN would make every
    comparison with the threshold false, and the factor silently of rank 0)."""
    w = np.asarray(weights.envelope, dtype=np.float64)
    if not np.all(np.isfinite(w) & (w >= 0)):
        raise ValueError("feature weights must be finite and non-negative")
    return w


def _upper_columns(G: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Columns ``rows`` of the symmetric matrix whose upper triangle G holds."""
    out = np.empty((len(G), len(rows)))
    for k, j in enumerate(rows):
        out[:j, k] = G[:j, j]
        out[j:, k] = G[j, j:]
    return out


def _pivoted_cholesky(
    d, columns, tol: float, width: int, trace_tol: float = 0.0, block=None, score=None
):  # fmt: skip
    """The blocked left-looking pivoted Cholesky factor of W (n x n, its diagonal d) from
    its columns: ``columns(rows)`` gives W's columns of those rows as a new n x k array
    (a block's pivots, or the rows left when the rest is factored at once); ``block(rows)``
    W's block of those rows (k x k; default: from ``columns``), on which the candidates'
    pivots are chosen before any column is formed, so that only the pivots' columns are;
    ``width`` the most columns the factor can have.  (F n x r, r, the pivots in order, the
    residual diagonal), F None and r 0 when nothing exceeds ``tol``.  ``trace_tol`` > 0:
    it also stops at the first pivot after which the residual's trace is at most that (a
    block's pivots are taken in order, so its columns up to that pivot are the factor's).
    ``score`` (n,), non-negative: the candidates are the rows of the largest ``score x``
    residual, and the trace is ``score``'s weighted sum (:func:`gram_pivoted_cholesky`); the
    threshold, the guard and the blocks' pivoting stay the residual's own."""
    n = len(d)
    s = None if score is None else np.asarray(score, dtype=np.float64)
    d = np.array(d, dtype=np.float64)  # the residual diagonal
    done = np.zeros(n, dtype=bool)
    # the factor's columns F[:, :r], column-major: a block of new columns fills whole pages
    # (row-major, its first block touched every page of the n x width buffer: 72 MB at
    # 3,000 rows, 0.1-0.3 s of page faults on a VM)
    F = np.empty((n, width), order="F")
    r = screened = 0
    taken: list[np.ndarray] = []
    if block is None:
        block = lambda rows: columns(rows)[rows]  # noqa: E731
    while True:
        left = np.flatnonzero(~done & (d > tol))
        if not len(left) or (trace_tol > 0 and _trace(d, s) <= trace_tol):
            break
        order = left[np.argsort(-(d[left] if s is None else d[left] * s[left]), kind="stable")]
        cand = order[:PIVOT_BLOCK]
        if screened + len(cand) > PIVOT_FINISH * n and screened > PIVOT_SPARSE * r:
            return _finish_factor(columns, F, r, d, done, tol, taken, trace_tol, s)
        screened += len(cand)
        rest = float(d[order[PIVOT_BLOCK:]].max()) if len(order) > PIVOT_BLOCK else 0.0
        block_tol = max(tol, PIVOT_GUARD * rest)
        B = block(cand)  # the candidates' block of W, and of its residual
        if r:
            B -= rows_product(F[cand, :r], F[cand, :r])
        pivots, Lb = _block_pivots(B, cand, block_tol)
        if not len(pivots) or block_tol == tol:
            done[cand] = True  # pivots, or at most the threshold
        if not len(pivots):
            continue
        R = columns(pivots)  # their residual columns
        if r:
            R -= rows_product(F[:, :r], F[pivots, :r])
        pivots, new = _within_trace(pivots, _through(Lb, R, pivots), d, trace_tol, s)
        done[pivots] = True
        taken.append(pivots)
        F, r = _append_columns(F, r, new)
        d -= np.einsum("ij,ij->i", new, new)
    return (*_factor(F, r, taken), d)


def _within_trace(pivots, new, d, trace_tol: float, s):
    """A block's pivots and new columns up to the first after which the residual's trace
    (``s'd`` less the new columns' squared norms weighted by s, in order) is at most
    ``trace_tol``; all of them when none is (or ``trace_tol`` is 0)."""
    if trace_tol <= 0 or not len(pivots):
        return pivots, new
    norms = np.einsum("ij,ij->j", new, new) if s is None else np.einsum("ij,ij,i->j", new, new, s)
    left = _trace(d, s) - np.cumsum(norms)
    hit = np.flatnonzero(left <= trace_tol)
    if not len(hit):
        return pivots, new
    k = int(hit[0]) + 1
    return pivots[:k], new[:, :k]


def _trace(d: np.ndarray, s: np.ndarray | None) -> float:
    """The residual's trace, weighted by s (None: unweighted)."""
    return float(d.sum()) if s is None else float(d @ s)


def _factor(F, r, taken):
    piv = np.concatenate(taken) if taken else np.zeros(0, dtype=np.intp)
    return (F[:, :r], r, piv) if r else (None, 0, piv)


def _block_pivots(B: np.ndarray, rows: np.ndarray, tol: float):
    """Cholesky with complete pivoting (dpstrf) of the residual block ``B`` of ``rows``
    down to ``tol``: (the rows taken as pivots, in order; the block's lower triangular
    factor in that order)."""
    from scipy.linalg.lapack import dpstrf

    U, piv, rank, info = dpstrf(B, lower=1, tol=tol)
    if info < 0:  # pragma: no cover - bad arguments
        raise np.linalg.LinAlgError(f"dpstrf: argument {-info}")
    return rows[piv[:rank] - 1], np.tril(U[:rank, :rank])


def _through(Lb: np.ndarray, R: np.ndarray, pivots: np.ndarray) -> np.ndarray:
    """The factor's new columns for ``pivots``: their residual columns R (n x k, in pivot
    order) through their block's factor Lb, the pivots' rows Lb itself."""
    from scipy.linalg import solve_triangular

    new = solve_triangular(Lb, R.T, lower=True, check_finite=False).T
    new[pivots] = Lb
    return new


def _append_columns(F: np.ndarray, r: int, new: np.ndarray) -> tuple[np.ndarray, int]:
    """``new`` as the factor's columns r..; the buffer grows where rounding took more
    pivots than it holds."""
    k = new.shape[1]
    if r + k > F.shape[1]:
        grown = np.empty((F.shape[0], r + max(k, r)), order="F")
        grown[:, :r] = F[:, :r]
        F = grown
    F[:, r : r + k] = new
    return F, r + k


def _finish_factor(columns, F, r, d, done, tol, taken, trace_tol, s):
    """The rest of :func:`_pivoted_cholesky`'s factor at once: W's columns of the remaining
    rows (``V V_S'`` by row tiles for rows), their residual ``W_SS - F_S F_S'`` factored by
    dpstrf with complete pivoting down to the threshold, the new columns of F from their
    residual columns."""
    rest = np.flatnonzero(~done & (d > tol))
    R = columns(rest)  # W's columns of the remaining rows
    if r:
        R -= rows_product(F[:, :r], F[rest, :r])
    pivots, Lb = _block_pivots(R[rest], rest, tol)
    if len(pivots):
        new = _through(Lb, R[:, np.searchsorted(rest, pivots)], pivots)
        pivots, new = _within_trace(pivots, new, d, trace_tol, s)
        taken.append(pivots)
        F, r = _append_columns(F, r, new)
        d -= np.einsum("ij,ij->i", new, new)
    return (*_factor(F, r, taken), d)


def feature_rank(
    V: np.ndarray, rel_tol: float = 1e-12, weights: FeatureWeights | None = None,
    trace_tol: float = 0.0,
) -> int:  # fmt: skip
    """The numerical rank of rows' features V (k x m) by :class:`rfcli.learn.gpr.Reduced`'s
    rule (its features weighed by ``weights``, stopped at the residual's trace
    ``trace_tol``)."""
    V = np.asarray(V, dtype=np.float64)
    return rows_pivoted_cholesky(V, rel_tol, weights, trace_tol)[1]
