"""Bandwidth heuristics: ``gamma = 1 / median(dist(x_i, x_j))`` over distinct pairs of a
row sample (squared Euclidean for Gaussian/Matern, L1 for Laplacian; docs/methods.md, Bandwidth)."""

from __future__ import annotations

import numpy as np

from rfcli.errors import InputError

METRICS = {"sqeuclidean": "sqeuclidean", "l1": "cityblock"}


def median_heuristic(sample: np.ndarray, metric: str = "sqeuclidean") -> float:
    X = np.asarray(sample, dtype=np.float64)
    if X.shape[0] < 2:
        raise InputError("gamma=auto needs at least 2 rows to compute the median heuristic")
    from scipy.spatial.distance import pdist

    med = float(np.median(pdist(X, METRICS[metric])))
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
    from scipy.spatial.distance import pdist, squareform

    X = np.unique(np.asarray(sample, dtype=np.float64)[:NN_ROWS], axis=0)
    if len(X) < 2:
        return float("inf")
    D = squareform(pdist(X, METRICS[metric]))
    np.fill_diagonal(D, np.inf)
    return 1.0 / float(np.median(D.min(axis=1)))
