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
