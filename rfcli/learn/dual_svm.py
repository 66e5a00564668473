"""The squared-hinge SVM in the n-dimensional dual, for data with fewer rows than features
(n < m; docs/learning.md, Small data), on the kernel matrix of rfcli.learn.dual.

Per column (one-vs-rest or one-vs-one: rfcli.learn.multiclass; a one-vs-one column's
training rows are its two classes'), the finite Newton method with exact line search
(Keerthi & DeCoste, "A modified finite Newton method for fast solution of large scale
linear SVMs", JMLR 2005) in the kernel form of Chapelle ("Training a support vector
machine in the primal", Neural Computation 2007): a Newton step is the ridge regression
of the labels on the rows inside the margin, ``(K_AA + I / 2C) beta + b = y_A, 1'beta =
0``; it ends when the set of rows inside the margin no longer changes, at the exact
optimum of the primal.

Which path runs depends on the loss, n and m only (:func:`svm_in_dual`), never on threads
or caches; the products run on one BLAS thread (:func:`rfcli.threads.one_blas_thread`),
and each column's arithmetic is the same on any thread, so the models depend neither on
the thread count nor on the engine.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from rfcli.learn.dual import Kernel, rows_pass, use_dual
from rfcli.threads import one_blas_thread


def svm_in_dual(loss: str, n_rows: int | None, n_features: int) -> bool:
    """Whether ``rfcli train --model svm`` trains in the dual: the squared hinge (the dual
    path's loss) on fewer rows than features."""
    return loss == "squared_hinge" and use_dual(n_rows, n_features)


def svm_scheme(multiclass: str, loss: str, n_rows: int | None, n_features: int) -> str:
    """The multi-class scheme ``rfcli train --model svm`` runs with ``--multiclass`` and
    ``--loss`` ("auto" resolves by the solver: rfcli.learn.multiclass.resolve)."""
    from rfcli.learn.multiclass import resolve

    return resolve(multiclass, svm_in_dual(loss, n_rows, n_features))


#: a column whose rows inside the margin are more than this many and outnumber those outside
#: may solve its Newton system through the inverse of its fold's ``K_TT + I/2C`` (formed
#: once per fold and C, where the Cholesky flops this saves the fold's columns exceed the
#: inverse's): it then costs the size of the rows outside (a Schur complement of the
#: inverse) instead of its own
COMPLEMENT_ROWS = 160
#: a Newton step that lowers a column's objective by less than this fraction ends it (a row
#: on the margin within rounding can enter and leave the set forever otherwise)
STALL = 1e-13


def _line_searches(a1: np.ndarray, a2: np.ndarray, M: np.ndarray, G: np.ndarray,
                   C: float) -> np.ndarray:  # fmt: skip
    """For each row r, the exact minimizer t >= 0 of the convex piecewise quadratic with
    derivative ``a1 + a2 t - 2C sum_i G_i max(0, M_i - t G_i)`` (the objective along a
    Newton direction: M the margin violations, G their rates of decrease; a row not in
    the problem has M = -1, G = 0), by a sweep over the points where a row enters or
    leaves the margin (Keerthi & DeCoste, JMLR 2005), all columns at once.  A row whose
    minimizer lies on the first piece (before its first breakpoint: most rows once their
    sets settle) takes it from there; only the others sort their breakpoints (the same
    result: the sweep stops at that piece)."""
    act = (M > 0) | ((M == 0) & (G < 0))
    s1 = np.where(act, G * M, 0.0).sum(axis=1)
    s2 = np.where(act, G * G, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = M / G
    tb = np.where((G != 0) & (tb > 0) & np.isfinite(tb), tb, np.inf)
    first_break = tb.min(axis=1)
    lo0 = a1 - 2 * C * s1  # f'(t) = lo0 + t sl0 before the first breakpoint
    sl0 = a2 + 2 * C * s2
    with np.errstate(invalid="ignore"):
        first = ~np.isfinite(first_break) | (lo0 + first_break * sl0 >= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sl0 > 0, -lo0 / sl0, 0.0)
    rest = np.flatnonzero(~first)
    if len(rest):
        t[rest] = _sweep(a1[rest], a2[rest], M[rest], G[rest], tb[rest], s1[rest], s2[rest], C)
    return np.maximum(t, 0.0)


def _sweep(a1, a2, M, G, tb, s1, s2, C) -> np.ndarray:
    """:func:`_line_searches`' minimizers by the sorted breakpoints ``tb`` (inf: none)."""
    order = np.argsort(tb, axis=1, kind="stable")
    tk = np.take_along_axis(tb, order, axis=1)
    gk = np.take_along_axis(G, order, axis=1)
    mk = np.take_along_axis(M, order, axis=1)
    # g > 0: the row leaves the margin at t_k; g < 0: it enters (no breakpoint: 0)
    sign = np.where(np.isfinite(tk), np.where(gk > 0, -1.0, 1.0), 0.0)
    zero = np.zeros((len(M), 1))
    c1 = s1[:, None] + np.hstack([zero, np.cumsum(sign * gk * mk, axis=1)])
    c2 = s2[:, None] + np.hstack([zero, np.cumsum(sign * gk * gk, axis=1)])
    lo = a1[:, None] - 2 * C * c1  # f'(t) = lo + t sl on interval j (before breakpoint j)
    sl = a2[:, None] + 2 * C * c2
    with np.errstate(invalid="ignore"):
        at_break = np.where(np.isfinite(tk), lo[:, :-1] + tk * sl[:, :-1], np.inf)
    at_break = np.hstack([at_break, np.full((len(M), 1), np.inf)])
    j = np.argmax(at_break >= 0, axis=1)
    r = np.arange(len(M))
    lo_j, sl_j = lo[r, j], sl[r, j]
    prev = np.where(j > 0, tk[r, np.maximum(j - 1, 0)], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sl_j > 0, -lo_j / sl_j, prev)
    return t


class _FoldInverse:
    """``(K_TT + lam I)^-1`` of one fold's training rows T, formed when first needed."""

    def __init__(self, K: np.ndarray, T: np.ndarray, lam: float):
        self.K, self.T, self.lam, self.W = K, T, lam, None
        self.pos = np.full(len(K), -1)
        self.pos[T] = np.arange(len(T))

    def inverse(self) -> np.ndarray:
        if self.W is None:
            from scipy.linalg.lapack import dpotrf, dpotri

            M = _principal(self.K, self.T, self.lam)
            c, info = dpotrf(M, lower=0, clean=0, overwrite_a=1)
            if info == 0:
                c, info = dpotri(c, lower=0, overwrite_c=1)
            if info != 0:
                raise np.linalg.LinAlgError("K_TT + lam I is not positive definite")
            self.W = np.triu(c) + np.triu(c, 1).T
        return self.W


def _principal(K: np.ndarray, A: np.ndarray, lam: float) -> np.ndarray:
    """``K_AA + lam I`` (a new array)."""
    M = K.take(A, axis=0).take(A, axis=1)
    M.flat[:: len(A) + 1] += lam
    return M


def _spd_solve(M: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``M^-1 R`` for symmetric positive definite M (its lower triangle read), by Cholesky:
    NumPy's factorization, which lets other threads run (SciPy's LAPACK wrappers hold the
    GIL: the threads of the SVM's column solves would take turns), then two triangular
    solves (O(s^2))."""
    from scipy.linalg import solve_triangular

    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise np.linalg.LinAlgError("the Newton system is not positive definite") from None
    Z = solve_triangular(L, R, lower=True, check_finite=False)
    return solve_triangular(L, Z, lower=True, trans="T", check_finite=False)


def _direct_point(K, lam, A, yA):
    """The minimizer over (beta on A, b) of the quadratic with the rows A inside the margin:
    ``(K_AA + lam I) beta + b = y_A, 1'beta = 0``; returns (beta_A, b).  No row inside:
    beta = 0 and b stays (nan).  (The minimizer is w = 0 with every row outside the
    margin; a column whose training rows are all of one side ends there.)"""
    if not len(A):
        return np.zeros(0), np.nan
    return _with_intercept(
        _spd_solve(_principal(K, A, lam), np.column_stack([yA, np.ones(len(A))]))
    )


def _with_intercept(X):
    """(beta, b) from ``X = M^-1 [y, 1]``: b makes ``1'beta = 0``."""
    b = X[:, 0].sum() / X[:, 1].sum()
    return X[:, 0] - b * X[:, 1], b


def _complement_points(inv: _FoldInverse, As: list, ys: list) -> list:
    """:func:`_direct_point` for several active sets A within one fold's training rows T,
    through the Schur complement of the fold's inverse W on the rows B = T - A:
    ``(M_AA)^-1 = W_AA - W_AB (W_BB)^-1 W_BA``; the products with W are one GEMM for all."""
    W = inv.inverse()
    nT, g = len(W), len(As)
    Rt = np.zeros((nT, 2 * g))
    outs = []
    for c, (A, yA) in enumerate(zip(As, ys, strict=True)):
        a = inv.pos[A]
        Rt[a, 2 * c], Rt[a, 2 * c + 1] = yA, 1.0
        out = np.ones(nT, dtype=bool)
        out[a] = False
        outs.append((a, np.flatnonzero(out)))
    WR = W @ Rt
    Zt = np.zeros((nT, 2 * g))
    for c, (_, B) in enumerate(outs):
        if len(B):
            Zt[B, 2 * c : 2 * c + 2] = _spd_solve(_principal(W, B, 0.0), WR[B, 2 * c : 2 * c + 2])
    X = WR - W @ Zt
    return [_with_intercept(X[a, 2 * c : 2 * c + 2]) for c, (a, _) in enumerate(outs)]


def _call(job):
    return job()


def _set_step(D, Db, beta, b, j, A, bA, bb) -> None:
    """Column j's step towards its Newton point (beta_A on the rows A, intercept bb)."""
    D[:, j] = -beta[:, j]
    D[A, j] += bA
    Db[j] = 0.0 if np.isnan(bb) else bb - b[j]


def _newton_report(C: float, steps: int, objective: float, done: np.ndarray, max_iter: int):
    """The report of a dual finite Newton solve (every column, or each on its own rows)."""
    converged = bool(done.all())
    return {
        "C": C,
        "loss": "squared_hinge",
        "iterations": steps,
        "passes": 0,
        "objective": objective,
        "converged": converged,
        "message": "the rows inside the margin no longer change (exact optimum)"
        if converged
        else f"{int((~done).sum())} column(s) still changing after {max_iter} Newton steps",
    }


def svm_newton(K, Y, train_mask, C, warm=None, max_iter=100, folds=None, tol=STALL,
               pool=None):  # fmt: skip
    """The squared-hinge SVM of every column of Y (n, k), +-1, on the rows where
    ``train_mask`` (n, k) holds, in the dual: dual coefficients (n, k) zero off the
    training rows, intercepts (k,), the scores K beta + b of every row (n, k) and a report.
    ``folds``: the fold of each column's held-out rows (columns of one fold share the
    inverse of their training rows' system), or None.  A column also ends when a step
    lowers its objective by less than ``tol`` relative.  ``pool``: an executor that
    solves the columns' Newton systems (each column's arithmetic is the same on any
    thread: the result does not depend on it)."""
    n, k = Y.shape
    lam = 1.0 / (2.0 * C)
    beta = np.zeros((n, k)) if warm is None else warm[0].copy()
    b = np.zeros(k) if warm is None else warm[1].copy()
    S = K @ beta + b
    used: list = [None] * k  # the rows inside the margin each column's last step solved for
    full = np.zeros(k, dtype=bool)  # whether that step went the whole way (t = 1)
    done = np.zeros(k, dtype=bool)
    invs: dict = {}
    n_train = train_mask.sum(axis=0)
    steps = 0
    while steps < max_iter:
        D = np.zeros((n, k))
        Db = np.zeros(k)
        todo = []
        cand: dict = {}  # fold -> columns whose rows outside the margin are fewer
        direct = []
        inside = np.ascontiguousarray((train_mask & (Y * S < 1)).T)  # (k, n): rows by column
        for j in np.flatnonzero(~done):
            A = np.flatnonzero(inside[j])
            if full[j] and np.array_equal(A, used[j]):
                done[j] = True  # at the minimizer of its own active set's quadratic: optimal
                continue
            used[j] = A
            todo.append(j)
            if len(A) > COMPLEMENT_ROWS and n_train[j] - len(A) < len(A):
                cand.setdefault(folds[j] if folds is not None else 0, []).append(j)
            else:
                direct.append(j)
        groups: dict = {}  # fold -> columns solved through the fold's inverse
        for key, js in cand.items():
            nT = int(n_train[js[0]])
            # Cholesky flops saved against those of forming the inverse (once per fold and C)
            saved = sum(len(used[j]) ** 3 - (nT - len(used[j])) ** 3 for j in js) / 3
            if key in invs or saved > nT**3:
                if key not in invs:
                    invs[key] = _FoldInverse(K, np.flatnonzero(train_mask[:, js[0]]), lam)
                groups[key] = js
            else:
                direct += js
        jobs = [partial(_direct_point, K, lam, used[j], Y[used[j], j]) for j in direct]
        jobs += [partial(_complement_points, invs[key], [used[j] for j in js],
                         [Y[used[j], j] for j in js]) for key, js in groups.items()]  # fmt: skip
        pts = list(pool.map(_call, jobs) if pool is not None else map(_call, jobs))
        for j, pt in zip(direct, pts, strict=False):
            _set_step(D, Db, beta, b, j, used[j], *pt)
        for js, gp in zip(groups.values(), pts[len(direct) :], strict=True):
            for j, pt in zip(js, gp, strict=True):
                _set_step(D, Db, beta, b, j, used[j], *pt)
        if not todo:
            break
        steps += 1
        cols = np.array(todo)
        Dc, Dbc, Sc, bc = D[:, cols], Db[cols], S[:, cols], b[cols]
        Yc, Tc = Y[:, cols], train_mask[:, cols]
        Delta = K @ Dc + Dbc
        a1 = np.einsum("ij,ij->j", Sc - bc, Dc)  # beta'K d
        a2 = np.einsum("ij,ij->j", Dc, Delta - Dbc)  # d'K d
        viol = np.where(Tc, 1 - Yc * Sc, -1.0)
        rate = np.where(Tc, Yc * Delta, 0.0)
        t = _line_searches(a1, a2, viol.T, rate.T, C)
        full[cols] = np.abs(t - 1.0) <= 1e-9
        # the objective's decrease along the step (exact: f is quadratic on each piece)
        old = np.square(np.maximum(viol, 0.0)).sum(axis=0)
        new = np.square(np.maximum(viol - t * rate, 0.0)).sum(axis=0)
        gain = -(t * a1 + 0.5 * t * t * a2) + C * (old - new)
        before = 0.5 * np.einsum("ij,ij->j", Sc - bc, beta[:, cols]) + C * old
        # a row on the margin within rounding can enter and leave forever: nothing to gain
        done[cols] |= gain <= tol * np.maximum(before, 1e-300)
        beta[:, cols] += t * Dc
        b[cols] += t * Dbc
        S[:, cols] = Sc + t * Delta
    viol = np.maximum(1 - Y * S, 0.0) * train_mask  # S = K beta + b, kept along the steps
    objective = 0.5 * float(np.einsum("ij,ij->", beta, S - b)) + C * float(np.sum(viol**2))
    report = _newton_report(C, steps, objective, done, max_iter)
    return beta, b, S, report


#: bytes of the narrow columns' kernel blocks ``K_{T_j T_j}`` kept across the Newton steps
#: and the C values (above it they are gathered anew for each batch of each step)
KEEP_BYTES = 256 << 20
#: bytes of one batch of Newton systems (and kernel blocks) solved by one call
BATCH_BYTES = 32 << 20
#: a narrow column's Newton system is padded to the next multiple of this size, and those
#: of one size are solved together: the size follows the column's own rows inside the
#: margin, so its arithmetic is the same whatever the batch
SIZE_STEP = 8
#: systems larger than this are solved one by one by Cholesky on their own size (half the
#: flops of the batched LU, and no padding, but a Python call per column); up to it, one
#: batched LU per batch, which also runs beside the other threads' (NumPy lets go of the
#: GIL; SciPy's LAPACK wrappers hold it).  On 1,000 letter rows with 5-fold C selection,
#: 2 threads, in turns: all batched 0.80-0.93 s against 0.86-1.02 s with Cholesky above
#: 64 rows and 0.98-1.56 s above 24-32 rows (one thread: 1.12 s against 1.33 s above 64)
BATCH_MAX = 256


def _blocks(K: np.ndarray, T: np.ndarray) -> np.ndarray:
    """``K_{T_j T_j}`` of the columns' (left-packed, padded) training rows T (c, r): (c, r, r)
    (the padding's entries are K's first row's and column's: masked by the callers), gathered
    16 columns at a time (the flat indices of one such part are small and reused)."""
    n, (c, r) = K.shape[0], T.shape
    out = np.empty((c, r, r))
    for i in range(0, c, 16):
        t = T[i : i + 16]
        np.take(K, t[:, :, None] * n + t[:, None, :], out=out[i : i + 16])
    return out


def _batch_points(KA: np.ndarray, yA: np.ndarray, nA: np.ndarray, lam: float):
    """Newton points of a batch of columns of one system size s: ``KA`` (c, s, s) the kernel
    of each column's rows inside the margin (the first ``nA`` of s; the rest padding),
    ``yA`` (c, s) their labels: (beta_A (c, s), zero on the padding; b (c,)) of
    ``(K_AA + lam I) beta + b = y_A, 1'beta = 0`` (:func:`_direct_point`).  Up to
    :data:`BATCH_MAX`: one batched solve, the padding decoupled as identity rows of a zero
    right-hand side; above: each column's own rows by Cholesky.  b nan where no row is
    inside."""
    c, s, _ = KA.shape
    live = np.arange(s)[None, :] < nA[:, None]
    if s <= BATCH_MAX:
        M = np.where(live[:, :, None] & live[:, None, :], KA, 0.0)
        d = np.arange(s)
        M[:, d, d] += np.where(live, lam, 1.0)
        R = np.stack([np.where(live, yA, 0.0), live.astype(np.float64)], axis=-1)
        X = np.linalg.solve(M, R)
    else:
        X = np.zeros((c, s, 2))
        R = np.stack([yA, np.ones_like(yA)], axis=-1)
        for i in np.flatnonzero(nA):
            a = int(nA[i])
            M = KA[i, :a, :a].copy()
            M.flat[:: a + 1] += lam
            X[i, :a] = _spd_solve(M, R[i, :a])
    with np.errstate(divide="ignore", invalid="ignore"):
        b = X[..., 0].sum(axis=1) / X[..., 1].sum(axis=1)
    beta = X[..., 0] - b[:, None] * X[..., 1]
    none = nA == 0
    beta[none], b[none] = 0.0, np.nan
    return beta, b


class NarrowColumns:
    """:func:`svm_newton` (the same method) for columns that each train on a small part of
    the rows (one-vs-one: two classes' rows, about 2/K of them): every column keeps its
    coefficients, scores and line search on its own training rows T_j (left-packed,
    padded to the largest); the columns of a group (one pair's folds) share the kernel
    block ``K_{UU}`` of the union U of their rows, kept for every step and C (while the
    blocks fit :data:`KEEP_BYTES`; else gathered anew), so that a step's products are one
    ``K_{UU}`` times the group's steps; the Newton systems are solved in batches of one
    system size (:data:`SIZE_STEP`), without Python work per column.  A column's Newton
    systems depend on its own rows only; the batches and groups are fixed by the data,
    not by the threads.  The scores of other rows are the caller's to form (the columns'
    coefficients are zero off their rows).  ``like``: an earlier instance whose kept blocks
    serve this one where its groups' rows are the same (the refit after the folds)."""

    def __init__(self, K: np.ndarray, Y: np.ndarray, train_mask: np.ndarray,
                 groups: np.ndarray | None = None, like: NarrowColumns | None = None):  # fmt: skip
        n, k = Y.shape
        self.K, self.n, self.k = K, n, k
        nT = train_mask.sum(axis=0)
        self.r = r = max(int(nT.max()), 1)
        self.valid = np.arange(r)[None, :] < nT[:, None]  # (k, r)
        self.T = np.zeros((k, r), dtype=np.int64)
        self.T[self.valid] = np.nonzero(train_mask.T)[1]  # each column's rows, in order
        self.y = np.where(self.valid, Y.T[np.arange(k)[:, None], self.T], 0.0)
        groups = np.arange(k) if groups is None else np.asarray(groups)
        self.gid = np.unique(groups, return_inverse=True)[1].reshape(-1)
        members = [np.flatnonzero(self.gid == g) for g in range(int(self.gid.max()) + 1)]
        rows = [np.flatnonzero(train_mask[:, js].any(axis=1)) for js in members]
        self.u = u = max(max(len(x) for x in rows), 1)
        self.width = max(len(js) for js in members)
        self.U = np.zeros((len(members), u), dtype=np.int64)
        self.slot = np.zeros(k, dtype=np.int64)  # a column's place among its group's
        self.L = np.zeros((k, r), dtype=np.int64)  # the positions in U of T_j's rows
        for g, (js, Ug) in enumerate(zip(members, rows, strict=True)):
            self.U[g, : len(Ug)] = Ug
            self.slot[js] = np.arange(len(js))
            self.L[js] = np.where(self.valid[js], np.searchsorted(Ug, self.T[js]), 0)
        fits = len(members) * u * u * 8 <= KEEP_BYTES
        if like is not None and like.KU is not None and np.array_equal(like.U, self.U):
            self.KU = like.KU  # the same groups' rows (the refit's pairs are the folds'): kept
        else:
            self.KU = _blocks(K, self.U) if fits else None

    def _times(self, D: np.ndarray, cols: np.ndarray | None = None, g0: int = 0,
               g1: int | None = None) -> np.ndarray:  # fmt: skip
        """``K_{T_j T_j} D_j`` of the columns ``cols`` (all: None; of the groups g0..g1 - 1),
        D (c, r) zero on the padding: per group, ``K_{UU}`` times the matrix of its
        columns' D (one product)."""
        cols = np.arange(self.k) if cols is None else cols
        g1 = len(self.U) if g1 is None else g1
        u, w = self.u, self.width
        vv = self.valid[cols]
        head = (self.gid[cols] - g0) * (u * w) + self.slot[cols]
        at = head[:, None] + self.L[cols] * w
        Dg = np.zeros((g1 - g0) * u * w)
        Dg[at[vv]] = D[vv]
        Dg = Dg.reshape(g1 - g0, u, w)
        if self.KU is not None:
            KD = np.matmul(self.KU[g0:g1], Dg)
        else:
            KD = np.empty_like(Dg)
            per = max(1, BATCH_BYTES // (8 * u * u))
            for i in range(0, g1 - g0, per):
                KU = _blocks(self.K, self.U[g0 + i : g0 + i + per])
                KD[i : i + per] = np.matmul(KU, Dg[i : i + per])
        return np.where(vv, KD.reshape(-1).take(at), 0.0)

    def _batch(self, j, beta, b, order, nA, size, lam):
        """Steps of the columns j (one system size): per column the Newton point on its
        rows inside the margin (``order``'s first ``nA``: positions in T), the step D
        towards it (c, r; zero on the padding) and Db (c,)."""
        at = np.arange(len(j))[:, None]
        P = order[:, :size]
        if self.KU is not None:  # flat indices into the kept blocks (groups, u, u)
            u = self.u
            LA = self.L[j][at, P]
            KA = self.KU.take((self.gid[j] * (u * u))[:, None, None] + (LA * u)[:, :, None]
                              + LA[:, None, :])  # fmt: skip
        else:
            TA = self.T[j][at, P]
            KA = self.K.take(TA[:, :, None] * self.n + TA[:, None, :])
        bA, bb = _batch_points(KA, self.y[j][at, P], nA, lam)
        D = -beta.copy()
        D[at, P] += bA
        return np.where(self.valid[j], D, 0.0), np.where(np.isnan(bb), 0.0, bb - b)

    def solve(self, C, warm=None, max_iter=100, tol=STALL, pool=None, parts=1):
        """Dual coefficients (n, k), zero off each column's rows, intercepts (k,) and the
        report of the squared-hinge SVM at C (``warm``: a start (coefficients (n, k),
        intercepts); the coefficients off a column's rows are not part of its problem).
        The groups are split into ``parts`` ranges solved on ``pool``'s threads (each
        column's arithmetic is its own: the same model for any split)."""
        k, r, valid = self.k, self.r, self.valid
        if warm is None:
            beta, b, S = np.zeros((k, r)), np.zeros(k), np.zeros((k, r))
        else:
            b = warm[1].copy()
            beta = np.where(valid, warm[0].T[np.arange(k)[:, None], self.T], 0.0)
            S = np.where(valid, self._times(beta) + b[:, None], 0.0)
        G = len(self.U)
        edges = np.linspace(0, G, max(1, min(int(parts), G)) + 1).astype(np.int64)
        jobs, cols = [], []
        for g0, g1 in zip(edges[:-1], edges[1:], strict=True):
            c = np.flatnonzero((self.gid >= g0) & (self.gid < g1))
            cols.append(c)
            jobs.append(partial(self._newton, c, int(g0), int(g1), beta[c], b[c], S[c], C,
                                max_iter, tol))  # fmt: skip
        done = np.zeros(k, dtype=bool)
        steps = 0
        outs = pool.map(_call, jobs) if pool is not None and len(jobs) > 1 else map(_call, jobs)
        for c, (bt, bb, sc, st, dn) in zip(cols, outs, strict=True):
            beta[c], b[c], S[c], done[c] = bt, bb, sc, dn
            steps = max(steps, st)
        B = np.zeros((self.n, k))
        B[self.T[valid], np.nonzero(valid)[0]] = beta[valid]
        viol = np.where(valid, np.maximum(1 - self.y * S, 0.0), 0.0)
        margin = np.where(valid, S - b[:, None], 0.0)
        objective = 0.5 * float(np.einsum("ij,ij->", margin, beta)) + C * float(np.sum(viol**2))
        return B, b, _newton_report(C, steps, objective, done, max_iter)

    def _newton(self, cols, g0, g1, beta, b, S, C, max_iter, tol):
        """The finite Newton method on the columns ``cols`` (those of the groups g0..g1 - 1)
        from (beta, b, S) (their rows): (beta, b, S, steps, done)."""
        c, r = len(cols), self.r
        valid, y = self.valid[cols], self.y[cols]
        lam = 1.0 / (2.0 * C)
        used = np.zeros((c, r), dtype=bool)  # the rows inside the margin of each last step
        full = np.zeros(c, dtype=bool)
        done = np.zeros(c, dtype=bool)
        steps = 0
        while steps < max_iter:
            inside = valid & (y * S < 1)
            done |= ~done & full & (inside == used).all(axis=1)  # at its set's minimizer
            todo = np.flatnonzero(~done)
            if not len(todo):
                break
            steps += 1
            used[todo] = inside[todo]
            nA = inside[todo].sum(axis=1)
            order = np.argsort(~inside[todo], axis=1, kind="stable")  # rows inside first
            size = np.minimum(-(-np.maximum(nA, 1) // SIZE_STEP) * SIZE_STEP, r)
            D, Db = np.zeros((len(todo), r)), np.zeros(len(todo))
            for s in np.unique(size):
                at = np.flatnonzero(size == s)
                per = max(1, BATCH_BYTES // (8 * 4 * int(s) ** 2))
                for i in range(0, len(at), per):
                    q = at[i : i + per]
                    D[q], Db[q] = self._batch(cols[todo[q]], beta[todo[q]], b[todo[q]],
                                              order[q], nA[q], int(s), lam)  # fmt: skip
            Sc, bc, yc, vc = S[todo], b[todo], y[todo], valid[todo]
            KD = self._times(D, cols[todo], g0, g1)
            Delta = np.where(vc, KD + Db[:, None], 0.0)
            margin = np.where(vc, Sc - bc[:, None], 0.0)
            a1 = np.einsum("ij,ij->i", margin, D)  # beta'K d
            a2 = np.einsum("ij,ij->i", D, KD)  # d'K d
            viol = np.where(vc, 1 - yc * Sc, -1.0)
            rate = np.where(vc, yc * Delta, 0.0)
            t = _line_searches(a1, a2, viol, rate, C)
            full[todo] = np.abs(t - 1.0) <= 1e-9
            old = np.square(np.maximum(viol, 0.0)).sum(axis=1)
            new = np.square(np.maximum(viol - t[:, None] * rate, 0.0)).sum(axis=1)
            gain = -(t * a1 + 0.5 * t * t * a2) + C * (old - new)
            before = 0.5 * np.einsum("ij,ij->i", margin, beta[todo]) + C * old
            done[todo] |= gain <= tol * np.maximum(before, 1e-300)
            beta[todo] += t[:, None] * D
            b[todo] += t * Db
            S[todo] = Sc + t[:, None] * Delta
        return beta, b, S, steps, done


def _solve_wide(K, Y, mask, C, warm, folds, max_iter, pool):
    """:func:`svm_newton` as the solver of :func:`_train_svm`'s problems."""
    return svm_newton(K, Y, mask, C, warm, max_iter, folds, pool=pool)


def train_svm(passes, targets, seed: int, n_folds: int, C, grid, default_C: float,
              max_iter: int, normalized: bool, progress=None, multiclass: str = "ovr"):  # fmt: skip
    """The squared-hinge SVM in the dual (the report as rfcli.jobs.train's primal path
    writes it): C given, chosen by ``n_folds``-fold cross-validation over ``grid``, or
    ``default_C``; ``multiclass``: the columns (rfcli.learn.multiclass).  The columns'
    Newton systems are solved on the engine's threads."""
    threads = int(getattr(passes, "threads", 1) or 1)
    args = (passes, targets, seed, n_folds, C, grid, default_C, max_iter, normalized, progress)
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        with (
            one_blas_thread(),
            ThreadPoolExecutor(threads, thread_name_prefix="rfcli-newton") as pool,
        ):
            return _train_svm(*args, pool, multiclass, threads)
    with one_blas_thread():
        return _train_svm(*args, None, multiclass, 1)


def _train_svm(passes, targets, seed, n_folds, C, grid, default_C, max_iter, normalized,
               progress, pool, multiclass, threads):  # fmt: skip
    from rfcli.learn import selection
    from rfcli.learn.multiclass import Columns
    from rfcli.learn.svm import LinearSVM

    kern = Kernel(passes.reduce(rows_pass, title="svm: pass 1, the rows (n < m: dual)"))
    idx = targets.index(kern.y)
    columns = Columns(len(targets.classes), multiclass)
    k = columns.n

    def problem(nf: int, like: NarrowColumns | None = None):
        """(solver, its NarrowColumns or None): the solver ``C, warm -> (beta, b, scores of
        every row or None, report)`` of the stacked columns (fold-major) of ``nf`` folds (0:
        all rows): one-vs-rest columns on all their fold's rows (a fold's columns share the
        inverse of their system), one-vs-one columns on their two classes' rows only
        (:class:`NarrowColumns`; ``like``: the folds' one, whose pair blocks the refit
        keeps)."""
        cols = np.arange(k * max(nf, 1))
        Y, rows = columns.targets(idx, cols % k)
        mask = np.ones(Y.shape, dtype=bool) if rows is None else rows
        if nf >= 2:
            mask &= fid[:, None] != (cols // k)[None, :]
        if columns.pairwise:  # a pair's folds are a group
            narrow = NarrowColumns(kern.K, Y, mask, groups=cols % k, like=like)

            def solve(C, warm):
                beta, b, rep = narrow.solve(C, warm, max_iter, pool=pool, parts=threads)
                return beta, b, None, rep

            return solve, narrow
        folds = cols // k if nf >= 2 else None
        return partial(_solve_wide, kern.K, Y, mask, folds=folds, max_iter=max_iter,
                       pool=pool), None  # fmt: skip

    report: dict[str, Any] = {"model": "svm", "task": "classification",
                              "loss": "squared_hinge", "solver": "dual",
                              "multiclass": multiclass}  # fmt: skip
    warm, narrow = None, None
    if n_folds:
        fid = kern.folds(seed, n_folds)
        sizes = np.bincount(fid, minlength=n_folds)
        selection.check_folds(sizes, kern.n)
        solve, narrow = problem(n_folds)
        sols: dict[float, tuple] = {}
        steps: dict[float, int] = {}

        def held_out(f: int, beta, b, S) -> float:
            """Fold f's held-out accuracy (its scores: kept, or its rows' kernel times the
            fold's coefficients, a product on one BLAS thread)."""
            V, fc = fid == f, slice(f * k, (f + 1) * k)
            Sv = S[V][:, fc] if S is not None else kern.K[V] @ beta[:, fc] + b[fc]
            return float(np.mean(columns.decide(Sv) == idx[V]))

        def evaluate(Cs: list[float]) -> dict[float, list[float]]:
            out = {}
            for c in Cs:
                beta, b, S, rep = solve(c, selection.nearest_start(sols, c))
                sols[c], steps[c] = (beta, b), rep["iterations"]
                run = partial(held_out, beta=beta, b=b, S=S)  # the folds on the threads
                out[c] = list(map(run, range(n_folds)) if pool is None
                              else pool.map(run, range(n_folds)))  # fmt: skip
            return out

        sel = selection.grid_search(grid, evaluate, lower_is_better=False, prefer_larger=False,
                                    progress=progress, metric="accuracy", together=False,
                                    title=f"svm: {n_folds}-fold cross-validation of C")  # fmt: skip
        C = sel["best"]
        cv = selection.cv_report("C", "accuracy", n_folds, sizes, sel)
        cv["newton_steps"] = {c: steps[c] for c in sel["values"]}
        report["cv"] = cv
        report["validation_accuracy"] = cv["mean"]
        beta, b = sols[C]
        # the refit starts from the folds' solutions: each row is a training row of all
        # folds but its own
        warm = (beta.reshape(kern.n, n_folds, k).sum(axis=1) / (n_folds - 1),
                b.reshape(n_folds, k).mean(axis=0))  # fmt: skip
    elif C == "auto":
        C = default_C
    C = float(C)
    beta, b, _, rep = problem(0, like=narrow)[0](C, warm)
    report.update(rep)
    report["total_passes"] = 1
    W, b0 = kern.primal(beta, b)
    pairs = columns.pairs if columns.pairwise else None
    return LinearSVM(targets, W, b0, normalized, multiclass=multiclass, pairs=pairs), report
