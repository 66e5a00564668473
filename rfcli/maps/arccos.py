"""Arc-cosine random features of order 0 and 1 (Cho & Saul 2009; SPEC 1.2).

``w_i ~ N(0, I_d)``.  Order 0: ``F_i = sqrt(2/m) H(w_i'x)`` estimates
``k0 = 1 - theta/pi``.  Order 1: ``F_i = sqrt(2/m) max(0, w_i'x)`` estimates
``k1 = (1/pi) ||x|| ||y|| (sin theta + (pi - theta) cos theta)``, theta the angle
between x and y.

Order 0 is natively 1 bit (quantizer ``binary``: codes are the Heaviside values).
Order 1 keeps ``z = max(0, w'x)/||x||`` (universal law: 0 with probability 1/2, else
half-normal) with the input row norm as the row scale.

References
----------
Cho, Y. and Saul, L. "Kernel methods for deep learning", NIPS 2009.
"""

from __future__ import annotations

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.maps.base import MAPS, FeatureMap, check_n_features
from rfcli.random import generator


def arccos_kernel(X: np.ndarray, Y: np.ndarray, order: int) -> np.ndarray:
    """Exact arc-cosine kernel of order 0 or 1, float64."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    nx = np.linalg.norm(X, axis=1)
    ny = np.linalg.norm(Y, axis=1)
    denom = np.outer(nx, ny)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(denom > 0, (X @ Y.T) / denom, 1.0)
    theta = np.arccos(np.clip(cos, -1.0, 1.0))
    if order == 0:
        return 1.0 - theta / np.pi
    return denom * (np.sin(theta) + (np.pi - theta) * np.cos(theta)) / np.pi


@MAPS.register("arccos0", "arccos1")
class ArcCosineMap(FeatureMap):
    """Arc-cosine features (see module docstring)."""

    array_names = ("W_",)

    def __init__(self, kind: str = "arccos0", n_features: int = 1024, seed: int = 0):
        if kind not in ("arccos0", "arccos1"):
            raise UsageError(f"unknown arc-cosine kernel {kind!r}")
        super().__init__(check_n_features(n_features), seed)
        self.kind = kind
        self.order = int(kind[-1])

    @property
    def value_law(self) -> str:  # type: ignore[override]
        return "binary" if self.order == 0 else "relu-normalized"

    @property
    def default_quantizer(self) -> str:  # type: ignore[override]
        return "binary" if self.order == 0 else "none"

    @property
    def uses_row_scale(self) -> bool:  # type: ignore[override]
        return self.order == 1

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> ArcCosineMap:
        self.W_ = (
            generator(self.seed, 0)
            .standard_normal((int(n_inputs), self.n_features))
            .astype(np.float32)
        )
        self.n_inputs_ = int(n_inputs)
        return self

    def transform_raw(self, X):
        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        Z = X @ self.W_
        if self.order == 0:
            return (Z > 0).astype(np.float32), None
        norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64)).astype(np.float32)
        np.maximum(Z, 0, out=Z)
        safe = np.where(norms > 0, norms, np.float32(1))
        Z /= safe[:, None]
        return Z, norms

    def kernel(self, X, Y):
        return arccos_kernel(X, Y, self.order)

    def _check_arrays(self) -> None:
        if self.W_.shape != (self.n_inputs_, self.n_features):
            raise ConfigError(f"map {self.kind}: W has shape {self.W_.shape}")
