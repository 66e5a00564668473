"""KRR in the n-dimensional dual, and the kernel matrix it shares with the dual SVM
(rfcli.learn.dual_svm), for data with fewer rows than features (n < m; docs/learning.md,
Small data).

With n rows of m > n features, every solution of the learners lies in the span of the
(centred) feature rows, so the problems are n-dimensional: one pass keeps the rows (n x m
float32, less memory than the m x m statistics of the primal), and the learners work on
the float64 kernel matrix ``K = Phi_c Phi_c'`` (n x n, centred by the rows' mean), which
all folds and all candidate values share.  The weights handed back are the primal ones,
``W = Phi_c' A`` for dual coefficients A, so the model is the same kind as the primal
path's (the same problem, solved exactly instead of from float32 statistics).

* KRR: fold f's training rows T solve ``(K_TT^c + alpha I) A = Y_T^c`` (K_TT^c: K re-centred
  on T's mean): one eigendecomposition of ``K_TT^c`` per fold gives every alpha's
  held-out predictions, ``K_VT^c U (S + alpha)^-1 U' Y_T^c``, for the cost of a product.
  The refit is one Cholesky solve of ``K + alpha I``.
* SVM (squared hinge): rfcli.learn.dual_svm, on the same kernel matrix.

Which path runs depends on n and m only (:func:`use_dual`), never on threads or caches;
the products run on one BLAS thread (:func:`rfcli.threads.one_blas_thread`, as the
engines' passes), so the models depend neither on the thread count nor on the engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.learn.data import fold_ids
from rfcli.threads import one_blas_thread


def use_dual(n_rows: int | None, n_features: int) -> bool:
    """The dual path: a known row count below the feature count."""
    return n_rows is not None and 0 < n_rows < n_features


class Rows:
    """The rows of a pass kept whole: (first global row, float32 features, labels) parts,
    added (concatenated) in row order whatever order the engine adds them in."""

    def __init__(self, parts: list):
        self.parts = parts

    def __add__(self, other: Rows) -> Rows:
        return Rows(sorted(self.parts + other.parts, key=lambda p: p[0]))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(global row index (n,), features (n, m) float32, labels (n,))."""
        parts = [p for p in self.parts if len(p[1])]
        rows = np.concatenate([np.arange(r0, r0 + len(F)) for r0, F, _ in parts])
        F = np.concatenate([F for _, F, _ in parts])
        y = np.concatenate([y for _, _, y in parts])
        return rows, F, y


def rows_pass(data) -> Rows:
    """Every row's decoded features and label (a pass function, see rfcli.engines.base)."""
    return Rows([(b.row0, np.array(b.F, dtype=np.float32), np.asarray(b.y))
                 for b in data.batches()])  # fmt: skip


class Kernel:
    """The rows' centred features and their float64 kernel matrix (see the module)."""

    def __init__(self, rows: Rows):
        self.rows, F32, self.y = rows.arrays()
        F = F32.astype(np.float64)
        self.mu = F.mean(axis=0)
        F -= self.mu
        self.Fc = F
        self.K = F @ F.T
        self.n, self.m = F.shape

    def folds(self, seed: int, n_folds: int) -> np.ndarray:
        """The rows' cross-validation folds (those of the primal path: by global row)."""
        out = np.empty(self.n, dtype=np.int64)
        # rows come in runs of consecutive global indices: one call per run
        breaks = np.flatnonzero(np.diff(self.rows) != 1) + 1
        for a, b in zip(np.r_[0, breaks], np.r_[breaks, self.n], strict=True):
            out[a:b] = fold_ids(seed, int(self.rows[a]), int(b - a), n_folds)
        return out

    def trace_scale(self) -> float:
        """``trace(Phi_c'Phi_c) / m`` (the scale of the KRR alpha grid)."""
        return max(float(np.trace(self.K)) / self.m, 1e-12)

    def primal(self, A: np.ndarray, b_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weights and intercepts on the (uncentred) features of dual coefficients A (n, k)
        for scores ``K A + b_c`` of the centred features."""
        W = self.Fc.T @ A
        return W, b_c - self.mu @ W


def _centre_on(K: np.ndarray, T: np.ndarray, V: np.ndarray):
    """``K_TT`` and ``K_VT`` re-centred on the mean of the rows T."""
    KTT = K[np.ix_(T, T)]
    r = KTT.mean(axis=1)
    g = r.mean()
    KTT = KTT - r[:, None] - r[None, :] + g
    KVT = K[np.ix_(V, T)]
    KVT = KVT - KVT.mean(axis=1)[:, None] - r[None, :] + g
    return KTT, KVT


class RidgeFold:
    """Held-out predictions of fold f for any alpha from one eigendecomposition of the
    training rows' centred kernel matrix."""

    def __init__(self, kern: Kernel, Y: np.ndarray, train: np.ndarray, held: np.ndarray):
        import scipy.linalg as sla

        KTT, KVT = _centre_on(kern.K, train, held)
        s, U = sla.eigh(KTT, check_finite=False)
        self.s = np.maximum(s, 0.0)
        self.ybar = Y[train].mean(axis=0)
        self.R = U.T @ (Y[train] - self.ybar)
        self.Q = KVT @ U

    def predict(self, alpha: float) -> np.ndarray:
        return self.Q @ (self.R / (self.s + alpha)[:, None]) + self.ybar


def ridge_fit(kern: Kernel, Y: np.ndarray, alpha: float):
    """(W, b, train predictions) of KRR on all rows at ``alpha``."""
    import scipy.linalg as sla

    ybar = Y.mean(axis=0)
    M = kern.K + alpha * np.eye(kern.n)
    A = sla.cho_solve(sla.cho_factor(M, check_finite=False), Y - ybar, check_finite=False)
    fitted = kern.K @ A + ybar
    W, b = kern.primal(A, ybar)
    return W, b, fitted


def ridge_scores(folds: list[RidgeFold], Yv: list[np.ndarray], regression: bool):
    """``evaluate(alphas) -> {alpha: per-fold scores}`` for rfcli.learn.selection.grid_search:
    the held-out MSE per output, or the accuracy of the arg-max (Yv: held-out targets, or
    class indices)."""

    def evaluate(alphas: list[float]) -> dict[float, list[float]]:
        out = {}
        for a in alphas:
            scores = []
            for fold, yv in zip(folds, Yv, strict=True):
                P = fold.predict(a)
                if regression:
                    scores.append(float(np.mean((P - yv) ** 2)))
                else:
                    scores.append(float(np.mean(P.argmax(axis=1) == yv)))
            out[a] = scores
        return out

    return evaluate


def train_ridge(passes, targets, seed: int, n_folds: int, alpha, default_index: int,
                normalized: bool, progress=None):  # fmt: skip
    """KRR in the dual (the report as rfcli.jobs.train's primal path writes it): alpha
    given, chosen by ``n_folds``-fold cross-validation (``n_folds`` >= 2), or the grid's
    entry ``default_index``.  On one BLAS thread (as the engines' passes: the same
    products whatever the engine or the cores)."""
    with one_blas_thread():
        return _train_ridge(passes, targets, seed, n_folds, alpha, default_index, normalized,
                            progress)  # fmt: skip


def _train_ridge(passes, targets, seed, n_folds, alpha, default_index, normalized, progress):
    from rfcli.learn import selection
    from rfcli.learn.ridge import RidgeModel, alpha_grid

    kern = Kernel(passes.reduce(rows_pass, title="krr: pass 1, the rows (n < m: dual)"))
    regression = targets.task == "regression"
    Y = targets.encode(kern.y).astype(np.float64)
    grid = alpha_grid(kern.trace_scale())
    report: dict[str, Any] = {"model": "krr", "task": targets.task, "solver": "dual"}
    if n_folds:
        fid = kern.folds(seed, n_folds)
        sizes = np.bincount(fid, minlength=n_folds)
        selection.check_folds(sizes, kern.n)
        idx = None if regression else targets.index(kern.y)
        folds, held = [], []
        for f in range(n_folds):
            T, V = np.flatnonzero(fid != f), np.flatnonzero(fid == f)
            folds.append(RidgeFold(kern, Y, T, V))
            held.append(Y[V] if regression else idx[V])
        sel = selection.grid_search(grid, ridge_scores(folds, held, regression), regression,
                                    prefer_larger=True, progress=progress,
                                    title=f"krr: {n_folds}-fold cross-validation of alpha",
                                    metric="mse" if regression else "accuracy")  # fmt: skip
        alpha = sel["best"]
        cv = selection.cv_report("alpha", "mse" if regression else "accuracy", n_folds, sizes,
                                 sel)  # fmt: skip
        report["cv"] = cv
        report["validation_mse" if regression else "validation_accuracy"] = cv["mean"]
    elif alpha != "auto":
        alpha = float(alpha)
    else:
        alpha = float(grid[default_index])
    W, b, fitted = ridge_fit(kern, Y, alpha)
    report.update({"alpha": alpha, "train_mse": float(np.mean((fitted - Y) ** 2))})
    return RidgeModel(targets, W, b, normalized), report
