"""L2-regularized linear SVM on random features, one-vs-rest or one-vs-one for K > 2
classes (docs/methods.md, Learners; the columns: rfcli.learn.multiclass).

Primal, all classes at once (the objective is separable over classes)::

    min_{W,b}  1/2 ||W||_F^2 + C sum_i sum_k loss(1 - y_ik (phi_i'w_k + b_k)),  y_ik in {-1, +1}

with ``loss(u) = max(0, u)^2`` (squared hinge, default) or ``max(0, u)`` (hinge).  The
columns k are independent problems; they may also be the same classes on other rows (the
training rows of each cross-validation fold, given by a mask): one pass then serves all
of them.  Solved by L-BFGS-B (scipy) with exact full-pass gradients: each function
evaluation is one pass over the data.  The problem is preconditioned with the Gram matrix
of the features (one extra pass, the same statistics as ridge regression): L-BFGS runs in
``V = L'[W; b]``, ``L L' = I + 2 C rho Phi'Phi``, which cuts the passes needed by an order
of magnitude on random features (whose covariance spectrum decays like the kernel's).
Stops when the relative objective reduction is below ``tol`` (scipy's ftol).  The squared
hinge is differentiable with a Lipschitz gradient, so L-BFGS converges properly.  The hinge
is not differentiable; it is minimized through Huber-smoothed hinges with width delta
decreasing 0.5 -> 0.05 -> 0.005 (warm-started); the smoothed objective is within
``C n delta / 2`` of the hinge objective, which is reported exactly at the end.

Why not a truncated Newton method (trust-region Newton-CG on the squared hinge's
generalized Hessian, as in Keerthi & DeCoste, "A modified finite Newton method for fast
solution of large scale linear SVMs", JMLR 2005, and Lin, Weng & Keerthi, "Trust region
Newton method for logistic regression", JMLR 2008)?  Near the optimum only the few rows on
or inside the margin carry the Hessian, which a Gram-matrix preconditioner does not
capture: conjugate gradients then need many steps per Newton step, each a pass, and they
restart from nothing at every step, while L-BFGS keeps its curvature pairs across passes.
It was tried with the same preconditioner and needed several times L-BFGS's passes (the
counts on letter: docs/learning.md, svm).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from rfcli.errors import ConfigError
from rfcli.learn.linear import MODELS, LinearModel
from rfcli.learn.multiclass import SCHEMES, Columns
from rfcli.progress import Iterations, NullProgress, Progress
from rfcli.threads import one_blas_thread

LOSSES = ("squared_hinge", "hinge")


@MODELS.register("svm")
class LinearSVM(LinearModel):
    """The SVM's weights: one column per binary problem of its multi-class ``scheme``
    (rfcli.learn.multiclass: ``"ovr"``, or ``"ovo"`` with the class ``pairs`` (P, 2) of
    its columns); :meth:`scores` are per class, whose arg-max is the prediction."""

    kind = "svm"

    def __init__(self, targets, W, b, normalized, info=None, multiclass: str = "ovr",
                 pairs: np.ndarray | None = None):  # fmt: skip
        super().__init__(targets, W, b, normalized, info)
        K = len(targets.classes)
        if multiclass not in SCHEMES:
            raise ConfigError(f"model svm: multiclass {multiclass!r} is not one of "
                              f"{', '.join(SCHEMES)}")  # fmt: skip
        self.multiclass = multiclass
        if multiclass == "ovo" and K > 2:
            pairs = np.asarray(pairs if pairs is not None else np.zeros((0, 2)), dtype=np.int64)
            ok = pairs.ndim == 2 and pairs.shape == (self.W.shape[1], 2)
            if not ok or (pairs < 0).any() or (pairs >= K).any():
                raise ConfigError(f"model svm: one-vs-one pairs {pairs.shape} do not fit "
                                  f"{self.W.shape[1]} columns of {K} classes")  # fmt: skip
            self.columns = Columns.from_pairs(K, pairs)
        else:
            self.columns = Columns(K, "ovr")
            if self.W.shape[1] != self.columns.n:
                raise ConfigError(f"model svm: {self.W.shape[1]} weight columns for {K} "
                                  "classes")  # fmt: skip

    def column_scores(self, F, precise: bool = True) -> np.ndarray:
        """The binary problems' scores ``F W + b`` (n, columns)."""
        return super().scores(F, precise)

    def scores(self, F, precise: bool = True):
        """Per-class scores (n, K) (rfcli.learn.multiclass.Columns.class_scores)."""
        return self.columns.class_scores(super().scores(F, precise))

    def to_state(self):
        cfg, arrays = super().to_state()
        cfg["multiclass"] = self.multiclass
        if self.columns.pairwise:
            arrays["pairs"] = self.columns.pairs
        return cfg, arrays

    @classmethod
    def _extra(cls, cfg, arrays):
        # model files written before the scheme existed are one-vs-rest
        scheme = cfg.get("multiclass", "ovr")
        return {"multiclass": scheme, "pairs": arrays.get("pairs")}


def _hinge(u: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The hinge loss's values and derivatives at margin violations u = 1 - y f, smoothed
    (Huber) over [0, delta] when delta > 0 (the squared hinge is computed in place in
    :func:`loss_terms`)."""
    if delta <= 0:
        return np.maximum(u, 0.0), (u > 0).astype(u.dtype)
    quad = (u > 0) & (u < delta)
    lin = u >= delta
    val = np.where(lin, u - delta / 2, np.where(quad, u * u / (2 * delta), 0.0))
    der = np.where(lin, 1.0, np.where(quad, u / delta, 0.0))
    return val, der


def _rows4(item):
    """(F, Y, mask, cols) from a row chunk given as (F, Y), (F, Y, mask) or (F, Y, mask,
    cols); mask None = all entries, cols None = all columns."""
    return tuple(item) + (None,) * (4 - len(item))


def loss_terms(
    rows: Iterable[tuple],
    W32: np.ndarray,
    b: np.ndarray,
    C: float,
    loss: str,
    delta: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The data term of the objective over ``rows``: chunks ``(F, Ypm)``, ``(F, Ypm, mask)``
    or ``(F, Ypm, mask, cols)`` of float32 features (n, m), targets in {-1, +1} (n, c),
    optionally which entries count (bool (n, c); the cross-validation folds' training rows
    of each column, the pair's rows of a one-vs-one column) and which of the k columns the
    chunk's c are (distinct indices; None: all k, c = k).  Returns (the sum of the losses
    per column (k,), its gradient in W times C, in b times C).  Additive over rows."""
    m, k = W32.shape
    gW = np.zeros((m, k))
    gb = np.zeros(k)
    total = np.zeros(k)
    for item in rows:
        F, Y, mask, cols = _rows4(item)
        if cols is not None:  # a chunk of rows in some problems only (one-vs-one: a class)
            t, g, gc = loss_terms([(F, Y, mask)], W32[:, cols], b[cols], C, loss, delta)
            total[cols] += t
            gW[:, cols] += g
            gb[cols] += gc
            continue
        # u = 1 - y (phi'w + b), in place (the arrays are chunk x columns: few temporaries)
        u = (F @ W32).astype(np.float64)
        u += b
        u *= Y
        np.subtract(1.0, u, out=u)
        if mask is not None:
            u *= mask
        if loss == "squared_hinge":
            np.maximum(u, 0.0, out=u)
            total += np.einsum("ij,ij->j", u, u)
            u *= Y
            u *= -2.0 * C  # the gradient in the scores: -2 C y max(0, u)
            gS = u
        else:
            val, der = _hinge(u, delta)
            total += val.sum(0)
            gS = -(C * der * Y)
        gW += (F.T @ gS.astype(np.float32)).astype(np.float64)
        gb += gS.sum(0)
    return total, gW, gb


def _preconditioner(gram, C, rho, m, p):
    """Lower Cholesky factor of ``diag(1..1, 0) + 2 C rho gram`` (None without a gram)."""
    if gram is None:
        return None
    R = 2.0 * C * rho * gram[:p, :p]
    R[np.arange(m), np.arange(m)] += 1.0
    if p > m:
        R[m, m] += 1e-9 * max(R[m, m], 1.0)
    with one_blas_thread():  # (m+1)^2: tens of milliseconds on one core
        return np.linalg.cholesky(R)


def fit_svm(
    evaluate: Callable[
        [np.ndarray, np.ndarray, float, float], tuple[np.ndarray, np.ndarray, np.ndarray]
    ],
    m: int,
    k: int,
    C: float,
    loss: str = "squared_hinge",
    fit_intercept: bool = True,
    max_iter: int = 1000,
    tol: float = 1e-7,
    warm: tuple[np.ndarray, np.ndarray] | None = None,
    gram: np.ndarray | None = None,
    rho: float = 0.1,
    progress: Progress | None = None,
    title: str = "svm",
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Minimize the primal; ``evaluate(W32, b, C, delta)`` makes one pass over the data and
    returns :func:`loss_terms` over all rows (Ypm in {-1, +1}).  Returns W (m, k), b (k,),
    and a report.  ``progress``: a task ``title`` counts the iterations, with the objective,
    the passes so far and the iterations expected (:class:`rfcli.progress.Iterations`).

    ``gram``: the (m+1, m+1) Gram matrix of ``[phi, 1]`` over the rows, for preconditioning:
    L-BFGS runs in variables ``V = L' [W; b]`` with ``L L' = diag(1..1, 0) + 2 C rho gram``,
    an approximation of the Hessian when a fraction rho of the margins is active.
    """
    import scipy.linalg as sla  # here: a model's predictions need no scipy

    state = {"evals": 0}
    p = m + 1 if fit_intercept else m
    L = _preconditioner(gram, C, rho, m, p)

    def to_wb(theta):
        V = theta.reshape(p, k)
        X = sla.solve_triangular(L, V, lower=True, trans="T") if L is not None else V
        return X[:m], (X[m] if fit_intercept else np.zeros(k))

    def objective(theta: np.ndarray, delta: float) -> tuple[float, np.ndarray]:
        W, b = to_wb(theta)
        total, gW, gb = evaluate(W.astype(np.float32), b, C, delta)
        state["evals"] += 1
        f = 0.5 * np.sum(W * W) + C * float(np.sum(total))
        g = np.vstack([gW + W, gb[None, :]]) if fit_intercept else gW + W
        if L is not None:
            g = sla.solve_triangular(L, g, lower=True)
        return f, g.ravel()

    theta = np.zeros(p * k)
    if warm is not None:
        X = np.vstack([warm[0], warm[1][None, :]]) if fit_intercept else warm[0]
        theta = (L.T @ X if L is not None else X).ravel()
    deltas = [0.0] if loss == "squared_hinge" else [0.5, 0.05, 0.005]
    iters, converged, message = 0, True, ""
    from scipy.optimize import minimize  # lazily (CLI start-up)

    progress = progress or NullProgress()
    with progress.task(title, max_iter * len(deltas), unit="iterations") as task:
        it = Iterations(task, max_iter, tol, stages=len(deltas))
        step = it.callback(lambda f: {"objective": f, "passes": state["evals"]})

        for i, delta in enumerate(deltas):
            if i:
                it.next_stage()
            # the arithmetic between passes is (m x k)-sized (triangular solves, L-BFGS
            # updates): one BLAS thread (a pass sets its own threads); multi-threaded BLAS on
            # products this small loses more to synchronization than it gains, most of all
            # on shared cores
            with one_blas_thread():
                res = minimize(
                    objective,
                    theta,
                    args=(delta,),
                    jac=True,
                    method="L-BFGS-B",
                    callback=step,
                    options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-5, "maxcor": 20},
                )
            theta, iters = res.x, iters + res.nit
            converged, message = converged and bool(res.success), str(res.message)
    final, _ = objective(theta, 0.0)
    W, b = to_wb(theta)
    report = {
        "C": C,
        "loss": loss,
        "iterations": int(iters),
        "passes": int(state["evals"]),
        "objective": float(final),
        "converged": converged,
        "message": message,
    }
    return W, b, report
