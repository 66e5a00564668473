"""Random Fourier features with random phase for shift-invariant kernels (docs/methods.md).

``z_i(x) = cos(w_i'x + tau_i)``, ``tau_i ~ U(0, 2 pi)``, ``F_i = sqrt(2/m) z_i`` and
``E[F(x).F(y)] = k(x, y)`` (Rahimi & Recht 2007).  The kernel decides the law of w:

===========  ========================================  ===============================
kernel       k(x, y)                                   w
===========  ========================================  ===============================
gaussian     exp(-gamma ||x-y||^2)                     N(0, 2 gamma I)
laplacian    exp(-gamma ||x-y||_1)                     iid Cauchy(0, gamma)
matern<nu>   Matern nu, lengthscale l = 1/sqrt(2 gamma) g sqrt(2 nu / u) / l,
                                                       g ~ N(0, I), u ~ chi2(2 nu)
===========  ========================================  ===============================

The Matern lengthscale convention makes every Matern kernel tend to the Gaussian kernel
of the same gamma as nu grows.  Whatever the kernel, z has the arcsine law on (-1, 1)
(Li & Li 2021, Theorem 2.2), so one Lloyd-Max quantizer per b serves them all.

References
----------
Rahimi, A. and Recht, B. "Random features for large-scale kernel machines", NIPS 2007.
Li, X. and Li, P. "Quantization algorithms for random Fourier features", International
Conference on Machine Learning (ICML), 2021.

Examples
--------
>>> import numpy as np
>>> from rfcli.maps import FourierMap
>>> X = np.random.default_rng(0).normal(size=(5, 3))
>>> fmap = FourierMap("gaussian", n_features=4096, gamma=0.1, seed=0).fit(3)
>>> F = fmap.transform(X)
>>> bool(np.abs(F @ F.T - fmap.kernel(X, X)).max() < 0.1)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.errors import ParameterTypeError, UsageError
from rfcli.maps.bandwidth import median_heuristic
from rfcli.maps.base import MAPS, FeatureMap, check_n_features, pairwise_sq_dists
from rfcli.names import FOURIER_KERNELS
from rfcli.random import generator

MATERN_NU = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}


def check_gamma(gamma: float | str) -> float | str:
    if gamma == "auto":
        return gamma
    msg = f"gamma must be a positive number or 'auto', got {gamma!r}"
    try:
        g = float(gamma)
    except TypeError:
        raise ParameterTypeError(msg) from None
    except ValueError:  # a string other than 'auto'
        raise UsageError(msg) from None
    if not (np.isfinite(g) and g > 0):
        raise UsageError(msg)
    return g


@MAPS.register(*FOURIER_KERNELS)
class FourierMap(FeatureMap):
    """Cosine random Fourier features with random phase (see module docstring).

    Parameters
    ----------
    kind : {"gaussian", "laplacian", "matern12", "matern32", "matern52"}, default="gaussian"
        The shift-invariant kernel.
    n_features : int, default=1024
        The number of features m.
    gamma : float or "auto", default="auto"
        The bandwidth of the kernel; "auto": the median heuristic on the fitting sample
        (:func:`rfcli.maps.bandwidth.median_heuristic`).
    seed : int, default=0
        The seed of the frequencies and phases.

    Attributes
    ----------
    gamma_ : float or None
        The bandwidth used (None until fitted with ``gamma="auto"``).
    W_ : ndarray of shape (d, n_features), float32
        The frequencies, once fitted.
    tau_ : ndarray of shape (n_features,), float32
        The phases, once fitted.
    """

    input_dtype = np.float32
    cosine_phase = True

    value_law = "arcsine"
    default_quantizer = "lm"
    array_names = ("W_", "tau_")

    def __init__(
        self,
        kind: str = "gaussian",
        n_features: int = 1024,
        gamma: float | str = "auto",
        seed: int = 0,
    ):
        if kind not in FOURIER_KERNELS:
            raise UsageError(
                f"unknown Fourier kernel {kind!r} (known: {', '.join(FOURIER_KERNELS)})"
            )
        super().__init__(check_n_features(n_features), seed)
        self.kind = kind
        self.gamma = check_gamma(gamma)
        self.gamma_: float | None = None if self.gamma == "auto" else float(self.gamma)

    @property
    def needs_sample(self) -> bool:
        return self.gamma == "auto"

    @property
    def metric(self) -> str:
        return "l1" if self.kind == "laplacian" else "sqeuclidean"

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> FourierMap:
        if self.gamma == "auto":
            if sample is None:
                raise ValueError("gamma='auto' needs a sample of rows")
            self.gamma_ = median_heuristic(sample, self.metric)
        d, m, g = int(n_inputs), self.n_features, float(self.gamma_)
        rng = generator(self.seed, 0)
        if self.kind == "gaussian":
            W = rng.standard_normal((d, m)) * np.sqrt(2.0 * g)
        elif self.kind == "laplacian":
            W = rng.standard_cauchy((d, m)) * g
        else:
            nu = MATERN_NU[self.kind]
            u = rng.chisquare(2.0 * nu, size=m)
            W = rng.standard_normal((d, m)) * (np.sqrt(2.0 * nu / u) * np.sqrt(2.0 * g))[None, :]
        self.W_ = W.astype(np.float32)
        self.__dict__.pop("_turns", None)  # transform_turns' matrix
        self.tau_ = generator(self.seed, 1).uniform(0.0, 2.0 * np.pi, m).astype(np.float32)
        self.n_inputs_ = d
        return self

    def transform_phase(self, X):
        """The phases ``t = x'W + tau`` in radians, whose cosines are the features
        (:meth:`transform_raw`; the encoder's threshold codes come from
        :meth:`transform_turns` instead).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, m), float32
            The phases.
        """
        self._check_fitted()
        Z = np.asarray(X, dtype=np.float32) @ self.W_
        Z += self.tau_
        return Z

    def transform_turns(self, X):
        """The phases in turns ``u = x'V + s`` with ``V = W / 2 pi`` and ``s = tau / 2 pi``
        (rounded to float32 from float64), as one float32 GEMM of ``[x, 1]`` with ``[V; s]``:
        ``cos(2 pi u)`` is the feature, and a threshold quantizer's codes follow from u
        exactly (:mod:`rfcli.quantize.phase`).  The phase enters the product, so no pass
        adds it; u differs from ``transform_phase(X) / 2 pi`` by the two products' rounding.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, m), float32
            The phases in turns.
        """
        self._check_fitted()
        X = np.asarray(X, dtype=np.float32)
        Xa = np.empty((X.shape[0], X.shape[1] + 1), dtype=np.float32)
        Xa[:, :-1] = X
        Xa[:, -1] = 1.0
        return Xa @ self._turns_matrix()

    def __getstate__(self):  # pickled (Dask tasks, estimators) without the derived matrix
        state = self.__dict__.copy()
        state.pop("_turns", None)
        return state

    def _turns_matrix(self) -> np.ndarray:
        """``[W; tau] / 2 pi`` as float32 (d + 1, m), made once per set of arrays."""
        W, tau = self.W_, self.tau_
        cached = self.__dict__.get("_turns")
        if cached is None or cached[0] is not W or cached[1] is not tau:  # (fit() drops it)
            Wt = np.vstack([W.astype(np.float64), tau.astype(np.float64)[None, :]])
            cached = (W, tau, (Wt / (2.0 * np.pi)).astype(np.float32))
            self._turns = cached
        return cached[2]

    def transform_raw(self, X):
        Z = self.transform_phase(X)
        np.cos(Z, out=Z)
        return Z, None

    def kernel(self, X, Y):
        g = float(self.gamma_)
        if self.kind == "gaussian":
            return np.exp(-g * pairwise_sq_dists(X, Y))
        if self.kind == "laplacian":
            from scipy.spatial.distance import cdist

            return np.exp(-g * cdist(X, Y, "cityblock"))
        return matern(
            np.sqrt(pairwise_sq_dists(X, Y)), MATERN_NU[self.kind], 1.0 / np.sqrt(2.0 * g)
        )

    def params(self) -> dict[str, Any]:
        return {"gamma": self.gamma}

    def fitted_params(self) -> dict[str, Any]:
        return {"gamma": self.gamma_}

    def _check_arrays(self) -> None:
        if self.W_.shape != (self.n_inputs_, self.n_features) or self.tau_.shape != (
            self.n_features,
        ):
            from rfcli.errors import ConfigError

            raise ConfigError(f"map {self.kind}: array shapes do not match n_inputs/n_features")

    def describe(self) -> str:
        return f"{self.kind} (gamma={self.gamma_:.6g})"


def matern(r: np.ndarray, nu: float, lengthscale: float) -> np.ndarray:
    """Matern kernel value at distance r (closed forms for nu = 1/2, 3/2, 5/2; SciPy's Bessel
    function for any other nu)."""
    s = np.asarray(r, dtype=np.float64) / lengthscale
    if nu == 0.5:
        return np.exp(-s)
    if nu == 1.5:
        t = np.sqrt(3.0) * s
        return (1.0 + t) * np.exp(-t)
    if nu == 2.5:
        t = np.sqrt(5.0) * s
        return (1.0 + t + t * t / 3.0) * np.exp(-t)
    from scipy.special import gamma as gamma_fn  # lazily: the closed forms need no SciPy
    from scipy.special import kv

    t = np.sqrt(2.0 * nu) * np.maximum(s, 1e-300)
    return np.where(s == 0, 1.0, 2.0 ** (1 - nu) / gamma_fn(nu) * t**nu * kv(nu, t))
