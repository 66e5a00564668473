"""Model selection by k-fold cross-validation: the folds, the passes that fit and score
them, the grid search and its report.

C or alpha ``"auto"`` (docs/learning.md): rows are split into
``cv_folds`` folds by a keyed hash of (seed, global row index), so the folds do not depend
on chunking or on the engine.  Every candidate is trained on each fold's complement and
scored on the fold; the best mean score wins (among equals the most regularized: the
smallest C, the largest alpha), the grid is extended by a decade on the side where the
best lies at its edge (at most ``MAX_EXTENSIONS`` times), and the chosen value is refitted
on all rows.  KRR: one pass gives every fold's statistics, each fold's candidates are
solved from them; the SVM solves all folds (and classes) as one separable problem in the
same passes, warm-started along increasing C, and the refit starts from the mean of the
folds' solutions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rfcli.errors import InputError
from rfcli.learn.data import fold_ids
from rfcli.learn.multiclass import Columns
from rfcli.learn.ridge import RidgeStats
from rfcli.learn.svm import loss_terms
from rfcli.learn.targets import target_shift
from rfcli.progress import NullProgress, Progress

#: decades the grid is extended by, at most, on the side where the best value is at its edge
MAX_EXTENSIONS = 2
#: warm start of the next C on the path: the nearest solution, moved along the secant
#: through the two nearest by this fraction of a step in log C (fewer passes: optdigits,
#: 5 folds, C = 0.01..100: 185 instead of 253 at better objectives)
PATH_STEP = 0.5


def fold_sizes(seed: int, n_rows: int, n_folds: int, block: int = 1 << 20) -> np.ndarray:
    """Rows in each cross-validation fold (see :func:`rfcli.learn.data.fold_ids`)."""
    counts = np.zeros(n_folds, dtype=np.int64)
    for r0 in range(0, n_rows, block):
        counts += np.bincount(
            fold_ids(seed, r0, min(block, n_rows - r0), n_folds), minlength=n_folds
        )
    return counts


def check_folds(sizes: np.ndarray, n_rows: int) -> None:
    if (sizes == 0).any() or (sizes == n_rows).any():
        raise InputError(
            f"{len(sizes)}-fold cross-validation needs rows in every fold and outside it; "
            f"{n_rows} row(s) give folds of {', '.join(map(str, sizes))} rows: use fewer "
            "cv_folds or give the value (C / alpha)"
        )


# -- pass functions (run by an engine on all rows or on one slice; results are additive) ------
def first_target_shift(data, targets) -> np.ndarray | None:
    """The shift subtracted from regression targets before their least-squares statistics
    (:func:`fold_stats_pass`; the model's intercept gets it back): the first row's targets
    (:func:`rfcli.learn.targets.target_shift`, as GP regression's statistics).  Without it
    the statistics' sums of squared targets lost the variance of targets far from zero (y +
    1e9, 2,000 rows: a training MSE of -131, an alpha 100x too small).  None for classes
    (one-hot targets)."""
    if targets is None or targets.task != "regression":
        return None
    for _, y in data.labels():
        if len(y):
            return target_shift(targets.encode(y[:1])[0])
    return None


def fold_stats_pass(data, targets, seed: int, n_folds: int,
                    shift: np.ndarray | None = None) -> list[RidgeStats]:  # fmt: skip
    """Least-squares statistics (Phi'Phi, Phi'Y, ...) of each fold's rows (``n_folds`` < 2:
    one, of all rows), of the targets less ``shift`` (:func:`first_target_shift`).
    ``targets=None``: one zero column (the SVM's preconditioner needs only Phi'Phi)."""
    m = data.encoder.n_features
    k = targets.n_outputs if targets is not None else 1
    stats = [RidgeStats(m, k) for _ in range(max(n_folds, 1))]
    for batch in data.batches():
        Y = targets.encode(batch.y) if targets is not None else np.zeros((len(batch), 1))
        if shift is not None:
            Y = Y - shift
        if n_folds < 2:
            stats[0].update(batch.F, Y)
            continue
        fid = fold_ids(seed, batch.row0, len(batch), n_folds)
        for f in range(n_folds):
            sel = fid == f
            if sel.any():
                stats[f].update(batch.F[sel], Y[sel])
    return [s.finish() for s in stats]


def fold_correct_pass(data, targets, seed: int, n_folds: int, Ws, bs, n_sol: int, columns=None):
    """Held-out rows predicted correctly: the rows of fold f by each of the ``n_sol`` linear
    models stacked in ``Ws[f]`` (m, n_sol k) and ``bs[f]``, their k columns decided by
    ``columns`` (:class:`rfcli.learn.multiclass.Columns`; None: k = 1 is a binary SVM, class
    1 when the score is positive, else the arg-max).  Returns correct counts (n_folds,
    n_sol)."""
    k = bs.shape[1] // n_sol
    columns = columns or as_columns(k)
    correct = np.zeros((n_folds, n_sol))
    for batch in data.batches():
        fid = fold_ids(seed, batch.row0, len(batch), n_folds)
        idx = targets.index(batch.y)
        for f in range(n_folds):
            sel = fid == f
            if not sel.any():
                continue
            S = ((batch.F[sel] @ Ws[f]).astype(np.float64) + bs[f]).reshape(-1, n_sol, k)
            correct[f] += (columns.decide(S) == idx[sel][:, None]).sum(0)
    return correct


def as_columns(k) -> Columns:
    """``k`` as the SVM's columns: a :class:`rfcli.learn.multiclass.Columns`, or k
    one-vs-rest columns (k = 1: two classes)."""
    if isinstance(k, Columns):
        return k
    return Columns(2 if k == 1 else k, "ovr")


def svm_rows(data, targets, k, seed: int, n_folds: int):
    """(F, Ypm, mask[, cols]) per batch for the stacked problem of the columns ``k`` (a
    :class:`rfcli.learn.multiclass.Columns`, or an int: k one-vs-rest columns, k = 1: class
    1 against class 0): column j is problem j % k on the training rows of fold j // k
    (``n_folds`` < 2: one problem per column on all rows, no mask).  One-vs-one columns
    come per class: the rows of class c with the columns of c's pairs only (``cols``), so
    a pass costs about what one-vs-rest's does."""
    columns = as_columns(k)
    k = columns.n
    cols = np.arange(k * max(n_folds, 1))
    held_out = cols // k
    for batch in data.batches():
        idx = targets.index(batch.y)
        fid = fold_ids(seed, batch.row0, len(batch), n_folds) if n_folds >= 2 else None
        if not columns.pairwise:
            Y, _ = columns.targets(idx, cols % k)
            mask = None if fid is None else fid[:, None] != held_out[None, :]
            yield batch.F, Y, mask
            continue
        for c in range(columns.n_classes):
            rows = np.flatnonzero(idx == c)
            if not len(rows):
                continue
            cc = columns.of_class(c)
            cc = (np.arange(max(n_folds, 1))[:, None] * k + cc[None, :]).ravel()
            Y, _ = columns.targets(idx[rows], cc % k)
            mask = None if fid is None else fid[rows, None] != held_out[None, cc]
            yield batch.F[rows], Y, mask, cc


def svm_pass(data, targets, k, seed, n_folds, W32, b, C, loss, delta):
    """The SVM objective's loss sums (per column) and gradient (see :func:`svm_rows`)."""
    return loss_terms(svm_rows(data, targets, k, seed, n_folds), W32, b, C, loss, delta)


# -- model selection ------------------------------------------------------------------------
def grid_search(
    grid,
    evaluate: Callable[[list[float]], dict[float, list[float]]],
    lower_is_better: bool,
    prefer_larger: bool,
    progress: Progress | None = None,
    title: str = "cross-validation",
    metric: str = "score",
    together: bool = True,
    lower_bound: float = 0.0,
) -> dict[str, Any]:
    """Grid search over ``grid`` with ``evaluate(values) -> {value: per-fold scores}``: the
    best mean, among equal means the largest value with ``prefer_larger`` (alpha: the most
    regularized), else the smallest (C); while it lies at the edge of the values tried,
    one more decade on that side (at most MAX_EXTENSIONS per side).  (Equal means are
    common: accuracy plateaus, e.g. over the smallest alphas of KRR with many rows.)
    ``progress``: a task ``title`` counts the values scored, with the best so far and its
    mean ``metric``; ``together=False`` scores the grid one value at a time (in increasing
    order, as ``evaluate`` of the grid would), so that the task advances with each.
    ``lower_bound``: the grid is not extended below it (KRR: the float32 floor of alpha,
    :func:`rfcli.learn.ridge.alpha_floor`); the result's ``floor`` says whether the best
    value sits on it."""
    progress = progress or NullProgress()
    with progress.task(title, len(grid), unit="values") as task:
        folds: dict[float, list[float]] = {}

        def score(values: list[float]) -> None:
            for part in [values] if together else [[v] for v in values]:
                folds.update(evaluate(part))
                done = sorted(folds)
                i = best_index(np.array([np.mean(folds[v]) for v in done]), lower_is_better,
                          prefer_larger)  # fmt: skip
                task.update(best=f"{done[i]:.4g}", **{metric: float(np.mean(folds[done[i]]))})
                task.advance(len(part))

        score(sorted(float(v) for v in grid))
        extended: list[float] = []
        ext = {"lower": 0, "upper": 0}
        while True:
            values = sorted(folds)
            means = np.array([np.mean(folds[v]) for v in values])
            best = best_index(means, lower_is_better, prefer_larger)
            side = "lower" if best == 0 else "upper" if best == len(values) - 1 else None
            if side is None or ext[side] >= MAX_EXTENSIONS:
                break
            if side == "lower" and values[0] / 10 < lower_bound * (1 - 1e-12):
                break
            ext[side] += 1
            new = values[0] / 10 if side == "lower" else values[-1] * 10
            extended.append(new)
            task.update(total=len(folds) + 1)
            score([new])
    return {
        "values": values,
        "mean": dict(zip(values, map(float, means), strict=True)),
        "folds": {v: [float(x) for x in folds[v]] for v in values},
        "best": values[best],
        "extended": extended,
        "edge": side,
        "floor": side == "lower" and lower_bound > 0 and values[0] <= lower_bound * (1 + 1e-12),
    }


def best_index(means: np.ndarray, lower_is_better: bool, prefer_larger: bool) -> int:
    """Index of the best of ``means`` (of values in increasing order); among means equal
    up to rounding the last with ``prefer_larger``, else the first."""
    key = -means if lower_is_better else means
    ties = np.flatnonzero(key >= key.max() - 1e-12 * max(1.0, abs(key.max())))
    return int(ties[-1] if prefer_larger else ties[0])


def cv_report(name: str, metric: str, n_folds: int, sizes, sel: dict) -> dict[str, Any]:
    """The report's record of a selection, and its warning when the best value is still at
    the edge of the (extended) grid."""
    cv = {
        "parameter": name,
        "folds": n_folds,
        "fold_rows": [int(x) for x in sizes],
        "metric": metric,
        "grid": sel["values"],
        "extended": sel["extended"],
        "mean": sel["mean"],
        "fold_scores": sel["folds"],
        "chosen": sel["best"],
        "warning": None,
    }
    if sel.get("floor"):
        cv["warning"] = (
            f"{name}={sel['best']:.4g} is the smallest value the float32 statistics resolve "
            "(a smaller one would fit their rounding errors)"
        )
    elif sel["edge"] is not None and len(sel["values"]) > 1:
        more = "smaller" if sel["edge"] == "lower" else "larger"
        cv["warning"] = (
            f"{name}={sel['best']:.4g} is at the {sel['edge']} edge of the grid "
            f"({sel['values'][0]:.4g} .. {sel['values'][-1]:.4g}, extended by "
            f"{len(sel['extended'])} decade(s)): a {more} {name} might score better"
        )
    return cv


class FoldSolver:
    """Ridge solutions of one fold's training rows (all rows but the fold's) for any alpha,
    from one eigendecomposition of the centred Gram matrix:
    ``W(alpha) = U (S + alpha)^-1 U' Phi_c'Y_c``.  ``total`` and ``fold``: settled
    statistics (a sum settles its terms)."""

    def __init__(self, total: RidgeStats, fold: RidgeStats):
        tr = RidgeStats(total.m, total.k)
        tr.S, tr.n = total.S - fold.S, total.n - fold.n
        Gc, FtYc = tr.centred()
        import scipy.linalg as sla

        self.evals, self.U = sla.eigh(Gc, check_finite=False)
        self.evals = np.maximum(self.evals, 0.0)
        self.UtB = self.U.T @ FtYc
        self.sF, self.sY, self.n = tr.sF, tr.sY, tr.n

    def solve(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        W = self.U @ (self.UtB / (self.evals + alpha)[:, None])
        return W, (self.sY - self.sF @ W) / max(self.n, 1)


def nearest_start(sols: dict, C: float):
    """Warm start at C: the solution at the nearest other C (in log C), or None.  The dual
    solvers' start: :func:`path_start`'s secant step overshoots there, where the rows
    inside the margin change much from one decade of C to the next (letter's 1,000-row
    one-vs-one columns took 41,000 column Newton steps over the grid from it, 33,000 from
    zero, 22,000 from the nearest solution)."""
    if not sols:
        return None
    return sols[min(sols, key=lambda c: abs(np.log(c / C)))]


def path_start(sols: dict, C: float):
    """Warm start at C from the solutions at other C: the nearest (in log C), moved by
    PATH_STEP of the secant step through it and the next one beyond it (when there is
    one), scaled to the distance in log C."""
    if not sols:
        return None
    a = min(sols, key=lambda c: abs(np.log(c / C)))
    beyond = [c for c in sols if (c < a if a < C else c > a)]
    if not beyond:
        return sols[a]
    b = min(beyond, key=lambda c: abs(np.log(c / a)))
    t = PATH_STEP * np.log(C / a) / np.log(a / b)
    (Wa, ba), (Wb, bb) = sols[a], sols[b]
    return Wa + t * (Wa - Wb), ba + t * (ba - bb)


def augmented_gram(stats: RidgeStats) -> np.ndarray:
    """Gram matrix of [phi, 1]: [[Phi'Phi, Phi'1], [1'Phi, n]]."""
    m = len(stats.sF)
    G = np.empty((m + 1, m + 1))
    G[:m, :m] = stats.gram()
    G[:m, m] = G[m, :m] = stats.sF
    G[m, m] = stats.n
    return G
