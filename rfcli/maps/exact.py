"""The exact GP's features: the kernel between a row and the training rows.

GP regression fits the exact GP where it costs less than a quadrature rule (docs/gpr.md,
Exact GP).  Its predictive mean and variance are linear and
quadratic in ``c(x) = [k(x, z_1), ..., k(x, z_n)]``, the unit-variance kernel between x and
the n training rows (Rasmussen & Williams, "Gaussian Processes for Machine Learning", MIT
Press 2006, eq. 2.25-2.26), so the model is the GP model of rfcli.learn.gpr on these
features.  The map keeps the (preprocessed) training rows, the kernel and its learned
lengthscales: nothing is drawn.

Kernels of the scaled distance ``r^2 = sum_j (x_j - z_j)^2 / l_j^2``: Gaussian
``exp(-r^2 / 2)``; Matern-nu for nu = 1/2, 3/2, 5/2 (rfcli.maps.fourier.matern).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.maps.base import MAPS, FeatureMap
from rfcli.maps.fourier import MATERN_NU, matern
from rfcli.names import GP_KERNELS

_SQRT3, _SQRT5 = np.sqrt(3.0), np.sqrt(5.0)


def scaled_sq_dists(X: np.ndarray, Z: np.ndarray, ell) -> np.ndarray:
    """``sum_j (x_ij - z_kj)^2 / l_j^2`` (n, k) from the differences themselves (no
    ``|x|^2 + |z|^2 - 2 x'z`` cancellation between close rows)."""
    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (X.shape[1],))
    out = np.zeros((len(X), len(Z)))
    for j in range(X.shape[1]):
        diff = np.subtract.outer(X[:, j] / ell[j], Z[:, j] / ell[j])
        diff *= diff
        out += diff
    return out


def squared_differences(X: np.ndarray, per_input: bool) -> list[np.ndarray]:
    """The rows' squared differences per input, ``(x_ij - x_kj)^2`` (n x n each), formed once
    for kernels at many lengthscales (:func:`scaled_sum`); where one lengthscale serves every
    input (``per_input=False``), their sum alone: a kernel then scales one array."""
    X = np.asarray(X, dtype=np.float64)
    D2 = [np.square(np.subtract.outer(c, c)) for c in X.T]
    return D2 if per_input else [sum(D2[1:], D2[0])]


def scaled_sum(D2: list[np.ndarray], ell) -> np.ndarray:
    """``r^2 = sum_j D2_j / l_j^2`` (a new array) from :func:`squared_differences` (one
    lengthscale: ``D2`` is their sum and ``ell`` its lengthscale)."""
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (len(D2),))
    R2 = D2[0] * (1.0 / (ell[0] * ell[0]))
    for Dj, lj in zip(D2[1:], ell[1:], strict=True):
        R2 += Dj * (1.0 / (lj * lj))
    return R2


def correlation(kernel: str, R2: np.ndarray) -> np.ndarray:
    """The unit-variance kernel at scaled squared distances ``R2``."""
    if kernel == "gaussian":
        return np.exp(-0.5 * R2)
    if kernel in MATERN_NU:
        return matern(np.sqrt(R2), MATERN_NU[kernel], 1.0)
    raise UsageError(f"exact GP kernel must be one of {', '.join(GP_KERNELS)}, got {kernel!r}")


def correlation_slope(kernel: str, R2: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``h = -2 dk/d(r^2)``, so that ``dk / dlog l_j = h * (x_j - z_j)^2 / l_j^2`` (``C``: the
    kernel at R2).  Matern 1/2 is not differentiable at r = 0, where its term is 0."""
    if kernel == "gaussian":
        return C
    r = np.sqrt(R2)
    if kernel == "matern12":  # -k'(r) / r = exp(-r) / r
        return np.divide(C, r, out=np.zeros_like(C), where=r > 0)
    if kernel == "matern32":  # k' = -3 r exp(-sqrt3 r)
        return 3.0 * np.exp(-_SQRT3 * r)
    t = _SQRT5 * r  # matern52: k' = -(5/3) r (1 + sqrt5 r) exp(-sqrt5 r)
    return (5.0 / 3.0) * (1.0 + t) * np.exp(-t)


@MAPS.register("exact")
class TrainingRowsMap(FeatureMap):
    """Features ``k(x, z_i)`` for the n training rows ``z_i`` (module docstring): a map of
    a fitted exact GP, made by GP regression from its rows (:meth:`fit_rows`), not by an
    encode."""

    value_law = "any"
    default_quantizer = "none"
    array_names = ("Z_",)

    def __init__(self, kind: str = "exact", n_features: int = 0, seed: int = 0,
                 kernel: str = "gaussian", lengthscale=None):  # fmt: skip
        super().__init__(int(n_features), seed)
        if kernel not in GP_KERNELS:
            raise UsageError(f"exact GP kernel must be one of {', '.join(GP_KERNELS)}, "
                             f"got {kernel!r}")  # fmt: skip
        self.kind = "exact"
        self.kernel_name = kernel
        self.lengthscale = None if lengthscale is None else [float(v) for v in lengthscale]

    @property
    def feature_scale(self) -> float:
        return 1.0

    def fit(self, n_inputs: int, sample=None):
        raise UsageError("an exact GP's map is made from its training rows by GP regression "
                         "(rfcli train --model gpr), not fitted alone")  # fmt: skip

    def fit_rows(self, Z: np.ndarray) -> TrainingRowsMap:
        """The map of the preprocessed training rows ``Z`` (n, d)."""
        Z = np.array(Z, dtype=np.float64)
        if self.lengthscale is None or len(self.lengthscale) not in (1, Z.shape[1]):
            raise UsageError("an exact GP's map needs one lengthscale, or one per input")
        self.Z_ = Z
        self.n_features = len(Z)
        self.n_inputs_ = Z.shape[1]
        return self

    def transform_raw(self, X):
        self._check_fitted()
        return correlation(self.kernel_name, scaled_sq_dists(X, self.Z_, self.lengthscale)), None

    def kernel(self, X, Y):
        return correlation(self.kernel_name, scaled_sq_dists(X, Y, self.lengthscale))

    def estimate_bytes(self, n_inputs: int) -> int:
        return 8 * n_inputs * self.n_features

    def params(self) -> dict[str, Any]:
        return {"kernel": self.kernel_name, "lengthscale": self.lengthscale}

    def _check_arrays(self) -> None:
        Z = self.Z_
        if Z.ndim != 2 or Z.shape != (self.n_features, self.n_inputs_):
            raise ConfigError("map exact: the training rows do not match n_features and n_inputs")
        if self.lengthscale is None or len(self.lengthscale) not in (1, self.n_inputs_):
            raise ConfigError("map exact: one lengthscale, or one per input, is needed")

    def describe(self) -> str:
        ell = ", ".join(f"{v:.4g}" for v in self.lengthscale or [])
        return f"exact {self.kernel_name} GP ({self.n_features} training rows, lengthscale {ell})"
