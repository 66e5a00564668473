"""Arc-cosine random features of order 0 and 1 (Cho & Saul 2009; docs/methods.md).

``w_i ~ N(0, I_d)``.  Order 0: ``F_i = sqrt(2/m) H(w_i'x)`` estimates
``k0 = 1 - theta/pi``.  Order 1: ``F_i = sqrt(2/m) max(0, w_i'x)`` estimates
``k1 = (1/pi) ||x|| ||y|| (sin theta + (pi - theta) cos theta)``, theta the angle
between x and y.

Order 0 is natively 1 bit (quantizer ``binary``: codes are the Heaviside values).
Order 1 keeps ``z = max(0, w'x)/||x||`` (universal law: 0 with probability 1/2, else
half-normal) with the input row norm as the row scale; the ``lm`` quantizer has a
closed-form Lloyd-Max design for that law (:class:`rfcli.quantize.laws.ReluNormalLaw`).

``modified`` (order 1, Han et al. 2021): importance-sampled weights ``v ~ q(v) propto p(v)||v||^2``
with features ``sqrt(d)/||v|| max(0, v'x)``, unbiased with lower variance.  q is exactly
"uniform direction u times a chi_{d+2} radius r" (no Gibbs sampling needed), and the radius
cancels: ``sqrt(d)/r max(0, r u'x) = sqrt(d) max(0, u'x)``, so only the directions are
drawn.  Its values have no universal law (quantize with ``empirical`` or ``none``).

References
----------
Cho, Y. and Saul, L. "Kernel methods for deep learning", NIPS 2009.
Han, I., Avron, H., Shoham, N., Kim, C. and Shin, J. "Random features for the neural
tangent kernel", arXiv:2104.01351, 2021.
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


def relu_weights(seed: int, stream: int, d: int, m: int, modified: bool) -> np.ndarray:
    """Weights (d, m) float32 of order-1 arc-cosine features: N(0, I) columns, or with
    ``modified`` the importance-sampled ``sqrt(d) u``, u uniform on the unit sphere."""
    W = generator(seed, stream).standard_normal((d, m))
    if modified:
        norms = np.linalg.norm(W, axis=0)
        W *= np.sqrt(d) / np.where(norms > 0, norms, 1.0)
    return W.astype(np.float32)


@MAPS.register("arccos0", "arccos1")
class ArcCosineMap(FeatureMap):
    """Arc-cosine features (see module docstring).

    Parameters
    ----------
    kind : {"arccos0", "arccos1"}, default="arccos0"
        The order: 0 (Heaviside features, natively 1 bit) or 1 (ReLU features with the
        input row norm as the row scale).
    n_features : int, default=1024
        The number of features m.
    seed : int, default=0
        The seed of the weights.
    modified : bool, default=False
        Order 1 only: importance-sampled weights (Han et al. 2021), unbiased with lower
        variance.

    Attributes
    ----------
    order : int
        0 or 1.
    W_ : ndarray of shape (d, n_features), float32
        The weights, once fitted.
    """

    input_dtype = np.float32

    array_names = ("W_",)

    def __init__(
        self, kind: str = "arccos0", n_features: int = 1024, seed: int = 0, modified=False
    ):
        if kind not in ("arccos0", "arccos1"):
            raise UsageError(f"unknown arc-cosine kernel {kind!r}")
        super().__init__(check_n_features(n_features), seed)
        self.kind = kind
        self.order = int(kind[-1])
        self.modified = bool(modified)
        if self.modified and self.order == 0:
            raise UsageError("modified applies to arc-cosine order 1 (arccos1) only")

    @property
    def value_law(self) -> str:  # type: ignore[override]
        if self.order == 0:
            return "binary"
        return "relu-sphere" if self.modified else "relu-normalized"

    @property
    def default_quantizer(self) -> str:  # type: ignore[override]
        if self.order == 0:
            return "binary"
        return "empirical" if self.modified else "lm"

    @property
    def uses_row_scale(self) -> bool:  # type: ignore[override]
        return self.order == 1

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> ArcCosineMap:
        self.W_ = relu_weights(self.seed, 0, int(n_inputs), self.n_features, self.modified)
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

    def params(self):
        # only when set, so the configs (and fingerprints) of plain maps stay as they were
        return {"modified": True} if self.modified else {}

    def describe(self) -> str:
        return self.kind + (" (modified)" if self.modified else "")

    def _check_arrays(self) -> None:
        if self.W_.shape != (self.n_inputs_, self.n_features):
            raise ConfigError(f"map {self.kind}: W has shape {self.W_.shape}")
