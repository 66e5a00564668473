"""Bandwidth heuristics: ``gamma = 1 / median(dist(x_i, x_j))`` over distinct pairs of a
row sample (squared Euclidean for Gaussian/Matern, L1 for Laplacian; docs/methods.md, Bandwidth)."""

from __future__ import annotations

import numpy as np

from rfcli.errors import InputError

METRICS = {"sqeuclidean": "sqeuclidean", "l1": "cityblock"}


def distances(X: np.ndarray, metric: str = "sqeuclidean") -> np.ndarray:
    """The (k, k) matrix of distances between the rows of ``X`` (float64), whose upper
    triangle is computed (the lower one mirrors it; the diagonal is 0).

    Squared Euclidean distances come from the Gram matrix of the centred rows
    (``|x|^2 + |y|^2 - 2 x.y``, clipped at 0), on one BLAS thread so that they do not
    depend on the thread count; centring keeps the cancellation at the rounding of the
    rows' spread, not of their offset.  This avoids importing scipy (about 0.15 s of an
    encode's start) for the heuristic of every default encode.  L1 distances are scipy's."""
    X = np.asarray(X, dtype=np.float64)
    if metric != "sqeuclidean":
        from scipy.spatial.distance import pdist, squareform

        return squareform(pdist(X, METRICS[metric]))
    from rfcli.threads import one_blas_thread

    Xc = X - X.mean(axis=0)
    with one_blas_thread():
        G = Xc @ Xc.T
    sq = np.diag(G).copy()
    D = np.triu(sq[:, None] + sq[None, :] - 2.0 * G, 1)
    np.maximum(D, 0.0, out=D)
    return D + D.T


def median_heuristic(sample: np.ndarray, metric: str = "sqeuclidean") -> float:
    X = np.asarray(sample, dtype=np.float64)
    if X.shape[0] < 2:
        raise InputError("gamma=auto needs at least 2 rows to compute the median heuristic")
    med = float(np.median(distances(X, metric)[np.triu_indices(len(X), 1)]))
    if not med > 0:
        raise InputError(
            "gamma=auto: the median distance between sample rows is 0 (constant input?); "
            "give a numeric gamma"
        )
    return 1.0 / med


#: rows of the sample the nearest-neighbour scale is measured on (pairwise: k^2 distances)
NN_ROWS = 2000


def nearest_neighbour_gamma(sample: np.ndarray, metric: str = "sqeuclidean") -> float:
    """``1 / median`` over the sample's first :data:`NN_ROWS` distinct rows of the distance
    (in ``metric``) to the nearest other row: the gamma at which the kernel between
    neighbours falls to 1/e.  Far above it the kernel matrix of the data is the identity,
    so no larger bandwidth parameter can be learned from them (inf when all rows coincide)."""
    X = np.unique(np.asarray(sample, dtype=np.float64)[:NN_ROWS], axis=0)
    if len(X) < 2:
        return float("inf")
    D = distances(X, metric)
    np.fill_diagonal(D, np.inf)
    return 1.0 / float(np.median(D.min(axis=1)))
