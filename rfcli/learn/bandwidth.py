"""The bandwidth chosen by validation (``gamma='search'``; docs/methods.md, Bandwidth).

The median heuristic (``gamma='auto'``) is only a scale: on real sets the validated
bandwidth is often several times larger or smaller (letter with unit rows: 39.3 against
4.9; co2: a 31x lower kernel-ridge MSE at the tuned value).  The search scores a log grid
of candidates ``gamma_0 * 2^k`` (k = -4..K, gamma_0 the median heuristic; K >= 4 reaches
NN_FACTOR times the sample's nearest-neighbour gamma, at most MAX_UP: low-dimensional data
such as co2's seasons need scales far below the median distance) with a cheap but
faithful learner and widens the grid while the best value sits at its edge:

* a bounded row sample (the ``BottomK`` hash sample of the fitting pass: at most
  :data:`SEARCH_ROWS` rows, the same for any chunking and engine), with its labels;
* the kernel's own random features at m' = min(n_features, 1024), drawn from the encode's
  seed, quantized by the encode's quantizer and decoded: the values the learners will
  read.  Codes of b bits lose the small variations of slowly varying features, so the
  best gamma for a store sits higher than for float features (letter's numbers:
  docs/learning.md, "Choosing the bandwidth");
* ridge regression (one-hot targets, arg-max, for classes) with its penalty chosen on the
  same folds from a grid relative to ``trace(G)/m``, the way the learners choose theirs;
* 3-fold cross-validation with folds from a keyed hash of the sample position; the
  per-fold Gram matrices come from one product each, the training Gram of a fold is the
  total minus the fold's.

Score: accuracy (classification) or minus the mean squared error (regression), averaged
over folds.  Cost: the sample's codes, one m x m Gram of the sample and 21 Cholesky
solves per candidate, independent of the input's size (measured: docs/learning.md,
"Choosing the bandwidth", Cost).  A sample of
fewer rows n than features is scored in the n-dimensional dual instead: one n x n kernel
matrix and one eigendecomposition per fold per candidate (O(n^2 m + n^3)).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rfcli.errors import InputError
from rfcli.random import keyed_uniform
from rfcli.threads import one_blas_thread

SEARCH_ROWS = 20_000
SEARCH_FEATURES = 1024
STEP = 2.0
HALF_WIDTH = 4  # candidates gamma_0 * STEP^k, k = -HALF_WIDTH .. HALF_WIDTH at least
MAX_EXTRA = 6  # steps added beyond an edge, at most, on each side
#: the grid reaches up to NN_FACTOR x the nearest-neighbour gamma (low-dimensional data,
#: whose kernel can vary on a scale far below the median distance: co2's seasons), at
#: most MAX_UP steps above gamma_0
NN_FACTOR = 4.0
MAX_UP = 18
FOLDS = 3
ALPHAS = 10.0 ** np.arange(-6, 1)  # relative to trace(G)/m


@dataclass
class SearchResult:
    gamma: float
    metric: str  # accuracy or mse
    candidates: list[float]
    scores: list[float]  # validation accuracy or MSE per candidate
    median_gamma: float
    rows: int
    features: int
    seconds: float
    at_edge: bool = False
    alphas: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "gamma": self.gamma,
            "metric": self.metric,
            "candidates": self.candidates,
            "scores": self.scores,
            "median_heuristic": self.median_gamma,
            "sample_rows": self.rows,
            "features": self.features,
            "folds": FOLDS,
            "at_edge": self.at_edge,
        }  # no timings: the store's metadata is the same on every run


def _targets(y: np.ndarray) -> tuple[np.ndarray, str, np.ndarray]:
    """(Y (n, k) float64, task, class index or values)."""
    if y.dtype.kind == "f":
        return (y - y.mean())[:, None].astype(np.float64), "regression", y
    classes, idx = np.unique(np.asarray(y, dtype=str if y.dtype == object else y.dtype),
                             return_inverse=True)  # fmt: skip
    if len(classes) < 2:
        raise InputError("gamma='search': the label has a single class in the sample")
    Y = -np.ones((len(y), len(classes)))
    Y[np.arange(len(y)), idx] = 1.0
    return Y, "classification", idx


def row_losses(S: np.ndarray, Y: np.ndarray, task: str, truth: np.ndarray) -> np.ndarray:
    """Each held-out row's loss under the predictions S: its squared error (regression) or
    0/1 error (classification, the arg-max); the score is minus the mean, or one minus it."""
    if task == "regression":
        return (S[:, 0] - Y[:, 0]) ** 2
    return (S.argmax(axis=1) != truth).astype(np.float64)


def _score(F: np.ndarray, Y: np.ndarray, task: str, truth: np.ndarray, folds: np.ndarray,
           dual: bool | None = None, losses: bool = False):  # fmt: skip
    """Mean over folds of the best validation score over the alpha grid (higher is better:
    accuracy, or minus the MSE), and that alpha.  ``dual`` (default: fewer sample rows
    than features): by :func:`_score_dual`.  ``losses``: also every row's held-out loss
    at that alpha (:func:`row_losses`)."""
    import scipy.linalg as sla

    n, m = F.shape
    if dual if dual is not None else n < m:
        return _score_dual(F, Y, task, truth, folds, losses)
    per_row = np.zeros((len(ALPHAS), n))
    Fa = np.column_stack([F, np.ones(len(F))]).astype(np.float32)  # an unpenalized intercept
    parts = []
    for f in range(FOLDS):  # float32 products (their rounding is far below the score's noise)
        A, B = Fa[folds == f], Y[folds == f]
        parts.append(
            ((A.T @ A).astype(np.float64), (A.T @ B.astype(np.float32)).astype(np.float64))
        )
    G = sum(p[0] for p in parts)
    R = sum(p[1] for p in parts)
    scale = max(np.trace(G[:m, :m]) / m, 1e-12)
    best = np.full(len(ALPHAS), 0.0)
    for f in range(FOLDS):
        Gt, Rt = G - parts[f][0], R - parts[f][1]
        val = folds == f
        diag = np.arange(m)
        for j, a in enumerate(ALPHAS):
            H = Gt.copy()
            H[diag, diag] += a * scale
            H[m, m] += 1e-9 * max(H[m, m], 1.0)
            try:
                W = sla.cho_solve(sla.cho_factor(H, check_finite=False), Rt, check_finite=False)
            except np.linalg.LinAlgError:
                best[j] += -np.inf
                continue
            S = Fa[val].astype(np.float64) @ W
            if task == "regression":
                best[j] += -float(np.mean((S[:, 0] - Y[val, 0]) ** 2))
            else:
                best[j] += float(np.mean(S.argmax(axis=1) == truth[val]))
            if losses:
                per_row[j, val] = row_losses(S, Y[val], task, truth[val])
    j = int(np.argmax(best))
    if losses:
        return best[j] / FOLDS, float(ALPHAS[j]), per_row[j]
    return best[j] / FOLDS, float(ALPHAS[j])


def _score_dual(F: np.ndarray, Y: np.ndarray, task: str, truth: np.ndarray, folds: np.ndarray,
                losses: bool = False):  # fmt: skip
    """:func:`_score` in the n-dimensional dual (n rows < m features; rfcli.learn.dual):
    per fold one eigendecomposition of the training rows' centred kernel matrix gives the
    held-out predictions of every alpha (the intercept unpenalized, where the primal
    penalizes it by 1e-9 of its diagonal); float64 throughout.  Cost O(n^2 m + n^3),
    following the sample instead of the features."""
    import scipy.linalg as sla

    from rfcli.learn.dual import _centre_on

    m = F.shape[1]
    K = F @ F.T
    scale = max(float(np.trace(K)) / m, 1e-12)  # the primal's trace(F'F) / m
    best = np.zeros(len(ALPHAS))
    per_row = np.zeros((len(ALPHAS), len(F)))
    for f in range(FOLDS):
        T, V = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        KTT, KVT = _centre_on(K, T, V)
        s, U = sla.eigh(KTT, check_finite=False)
        s = np.maximum(s, 0.0)
        ybar = Y[T].mean(axis=0)
        R, Q = U.T @ (Y[T] - ybar), KVT @ U
        for j, a in enumerate(ALPHAS):
            S = Q @ (R / (s + a * scale)[:, None]) + ybar
            if task == "regression":
                best[j] += -float(np.mean((S[:, 0] - Y[V, 0]) ** 2))
            else:
                best[j] += float(np.mean(S.argmax(axis=1) == truth[V]))
            if losses:
                per_row[j, V] = row_losses(S, Y[V], task, truth[V])
    j = int(np.argmax(best))
    if losses:
        return best[j] / FOLDS, float(ALPHAS[j]), per_row[j]
    return best[j] / FOLDS, float(ALPHAS[j])


def _widen(scores: dict, score: Callable[[int], float], lo: int, hi: int) -> None:
    """Add candidates beyond the edge of the grid while the best sits there."""
    while True:
        best = max(scores, key=lambda k: (scores[k][0], -abs(k)))
        if best == lo and lo > -HALF_WIDTH - MAX_EXTRA:
            lo -= 1
            score(lo)
        elif best == hi and hi < max(HALF_WIDTH + MAX_EXTRA, MAX_UP):
            hi += 1
            score(hi)
        else:
            return


def validation_folds(y, seed: int, what: str):
    """The sample's targets for validation (``_targets``: Y, task, the true labels) and each
    row's fold (a keyed hash of the seed and the row), refusing fewer than 3 FOLDS rows;
    ``what`` names the setting in the refusal."""
    n = len(y)
    if n < 3 * FOLDS:
        raise InputError(f"{what} needs at least {3 * FOLDS} labelled rows, got {n}")
    Y, task, truth = _targets(np.asarray(y))
    folds = (keyed_uniform(seed, np.arange(n), 1)[:, 0] * FOLDS).astype(int)
    return Y, task, truth, folds


def search_gamma(
    features: Callable[[float], np.ndarray],
    y: np.ndarray,
    median_gamma: float,
    seed: int,
    n_features: int,
    nn_gamma: float | None = None,
) -> SearchResult:
    """Choose gamma on the sample: ``features(gamma)`` gives the sample's features for a
    candidate as the store would hold them (quantized, decoded), ``y`` its labels (float:
    regression; int or text: classes).  ``nn_gamma``: the sample's nearest-neighbour gamma
    (:func:`rfcli.maps.bandwidth.nearest_neighbour_gamma`); the grid extends up to
    NN_FACTOR times it where that lies beyond its upper edge."""
    t0 = time.perf_counter()
    Y, task, truth, folds = validation_folds(y, seed, "gamma='search'")
    scores: dict[int, tuple[float, float]] = {}

    def score(k: int) -> float:
        if k not in scores:
            F = np.asarray(features(median_gamma * STEP**k), dtype=np.float64)
            scores[k] = _score(F, Y, task, truth, folds)
        return scores[k][0]

    lo, hi = -HALF_WIDTH, HALF_WIDTH
    if nn_gamma is not None and np.isfinite(nn_gamma) and nn_gamma > 0:
        up = int(np.ceil(np.log(NN_FACTOR * nn_gamma / median_gamma) / np.log(STEP)))
        hi = int(np.clip(up, HALF_WIDTH, MAX_UP))
    with one_blas_thread():  # the same floating-point sums whatever the threads or engine
        for k in range(lo, hi + 1):
            score(k)
        _widen(scores, score, lo, hi)
    ks = sorted(scores)
    best = max(ks, key=lambda k: (scores[k][0], -abs(k)))
    sign = 1.0 if task == "classification" else -1.0
    return SearchResult(
        gamma=float(median_gamma * STEP**best),
        metric="accuracy" if task == "classification" else "mse",
        candidates=[float(median_gamma * STEP**k) for k in ks],
        scores=[sign * scores[k][0] for k in ks],
        median_gamma=float(median_gamma),
        rows=len(y),
        features=int(n_features),
        seconds=time.perf_counter() - t0,
        at_edge=best in (ks[0], ks[-1]),
        alphas=[scores[k][1] for k in ks],
    )
