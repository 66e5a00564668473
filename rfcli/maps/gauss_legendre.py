"""Gauss-Legendre features (GLF) for Gaussian-process regression (Fink Shustin & Avron 2022).

For a stationary kernel with spectral density ``p_theta`` (convention ``e^{2 pi i eta'x}``)
``k(x, y) = s^2 int p_theta(eta) cos(2 pi eta'(x - y)) d eta``.  Truncating to
``[-L_j, L_j]`` per dimension and applying a tensor Gauss-Legendre rule with ``q_j`` (even)
nodes gives ``k~(x, y) = s^2 sum_l omega_l p_theta(eta_l) cos(2 pi eta_l'(x - y))``: with the
*fixed* features ``V(x) = [cos(2 pi x'H'), sin(2 pi x'H')]`` (H the nodes of one half-space,
weights doubled), ``K~ = V D_theta V' + lambda I`` and only the diagonal ``D_theta`` depends on
the hyperparameters.  One data pass gives ``V'V`` and ``V'y``; hyperparameter learning then
costs O(s^3) per step, independent of n.

Spectral densities, lengthscales ``l_j`` (ARD; isotropic = all equal), ``u = l * eta``:
Gaussian ``p = prod(l_j) (2 pi)^{d/2} exp(-2 pi^2 |u|^2)``;
Matern-nu ``p = prod(l_j) 2^d pi^{d/2} Gamma(nu + d/2) (2 nu)^nu / Gamma(nu)
(2 nu + 4 pi^2 |u|^2)^{-(nu + d/2)}``.

L and q are chosen for the whole lengthscale range: L from the spectral tail mass at the
smallest lengthscale, q by doubling until the kernel error on probe differences from the
data bounding box is below ``tol`` at the smallest, middle and largest lengthscale.

References
----------
Fink Shustin, P. and Avron, H. "Gauss-Legendre features for Gaussian process
regression", Journal of Machine Learning Research 23, 2022.  Formulas: docs/methods.md,
Gauss-Legendre features.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.maps.base import MAPS, FeatureMap
from rfcli.maps.fourier import MATERN_NU, matern

GLF_KERNELS = ("gaussian", *MATERN_NU)
MAX_DIM = 3
MAX_NODES = 3000  # half-space nodes (2x that many features; G is (2 MAX_NODES)^2 float64)


def log_spectral_density(kernel: str, eta: np.ndarray, ell: np.ndarray) -> np.ndarray:
    """log p(eta) for unit signal variance; eta (s, d), ell (d,)."""
    from scipy.special import gammaln  # lazily: scipy.special slows CLI start-up

    d = eta.shape[1]
    u2 = np.sum((eta * ell) ** 2, axis=1)
    base = np.sum(np.log(ell))
    if kernel == "gaussian":
        return base + d / 2 * np.log(2 * np.pi) - 2 * np.pi**2 * u2
    nu = MATERN_NU[kernel]
    c = (
        d * np.log(2)
        + d / 2 * np.log(np.pi)
        + gammaln(nu + d / 2)
        + nu * np.log(2 * nu)
        - gammaln(nu)
    )
    return base + c - (nu + d / 2) * np.log(2 * nu + 4 * np.pi**2 * u2)


def dlog_density_dlog_ell(kernel: str, eta: np.ndarray, ell: np.ndarray) -> np.ndarray:
    """d log p / d log l_j, shape (s, d)."""
    a = (2 * np.pi * eta * ell) ** 2  # 4 pi^2 l_j^2 eta_j^2
    if kernel == "gaussian":
        return 1.0 - a
    nu = MATERN_NU[kernel]
    d = eta.shape[1]
    return 1.0 - (nu + d / 2) * 2 * a / (2 * nu + a.sum(axis=1, keepdims=True))


def stationary_kernel(kernel: str, X: np.ndarray, Y: np.ndarray, ell) -> np.ndarray:
    """Exact unit-variance kernel with lengthscales ell (scalar or per dimension)."""
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (X.shape[1],))
    Xs, Ys = X / ell, Y / ell
    r2 = np.maximum((Xs**2).sum(1)[:, None] + (Ys**2).sum(1)[None, :] - 2 * Xs @ Ys.T, 0.0)
    if kernel == "gaussian":
        return np.exp(-r2 / 2)
    return matern(np.sqrt(r2), MATERN_NU[kernel], 1.0)


def cutoff_for(kernel: str, ell_lo: float, tail: float) -> float:
    """L such that the 1-D marginal of p at lengthscale ell_lo has mass <= tail outside [-L, L]."""
    from scipy.special import ndtri, stdtrit  # lazily: scipy.special slows CLI start-up

    if kernel == "gaussian":  # eta_j ~ N(0, 1/(2 pi l)^2)
        return float(-ndtri(tail / 2) / (2 * np.pi * ell_lo))  # normal upper quantile
    nu = MATERN_NU[kernel]  # 2 pi l eta_j / sqrt(2 nu) ~ Student t with 2 nu degrees of freedom
    upper = -stdtrit(2 * nu, tail / 2)  # Student t upper quantile (scipy.stats' t.isf)
    return float(upper * np.sqrt(2 * nu) / (2 * np.pi * ell_lo))


def half_space_nodes(L: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Legendre nodes on prod [-L_j, L_j] (q_j even), the half with eta_1 > 0,
    weights doubled (cos is even, so each +-eta pair is one node)."""
    axes, weights = [], []
    for Lj, qj in zip(L, q, strict=True):
        x, w = np.polynomial.legendre.leggauss(int(qj))
        axes.append(x * Lj)
        weights.append(w * Lj)
    axes[0], weights[0] = axes[0][axes[0] > 0], 2 * weights[0][axes[0] > 0]
    grids = np.meshgrid(*axes, indexing="ij")
    wgrid = np.meshgrid(*weights, indexing="ij")
    H = np.stack([g.ravel() for g in grids], axis=1)
    w = np.prod(np.stack([g.ravel() for g in wgrid], axis=1), axis=1)
    return H, w


def quadrature_kernel(kernel: str, H, w, delta: np.ndarray, ell) -> np.ndarray:
    """k~(delta) = sum_l w_l p(eta_l) cos(2 pi eta_l'delta) for differences delta (n, d)."""
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (H.shape[1],))
    wp = w * np.exp(log_spectral_density(kernel, H, ell))
    return np.cos(2 * np.pi * delta @ H.T) @ wp


@MAPS.register("glf")
class GaussLegendreMap(FeatureMap):
    """Gauss-Legendre features (see module docstring).  Features are not random: ``seed``
    only chooses the probe differences used to pick q."""

    value_law = "any"
    default_quantizer = "none"
    needs_box = True
    array_names = ("H_", "w_")

    def __init__(
        self,
        kind: str = "glf",
        n_features: int = 0,
        seed: int = 0,
        kernel: str = "gaussian",
        lengthscale_bounds: tuple[float, float] = (0.1, 10.0),
        tol: float = 1e-4,
        nodes: list[int] | None = None,
        cutoff: list[float] | None = None,
    ):
        super().__init__(0, seed)
        if kernel not in GLF_KERNELS:
            raise UsageError(f"GLF kernel must be one of {', '.join(GLF_KERNELS)}, got {kernel!r}")
        lo, hi = (float(v) for v in lengthscale_bounds)
        if not 0 < lo <= hi:
            raise UsageError(f"lengthscale_bounds must satisfy 0 < lo <= hi, got ({lo}, {hi})")
        if not 0 < tol < 1:
            raise UsageError(f"tol must be in (0, 1), got {tol}")
        self.kind = "glf"
        self.kernel_name = kernel
        self.lengthscale_bounds = (lo, hi)
        self.tol = float(tol)
        self.nodes = None if nodes is None else [int(v) for v in nodes]
        self.cutoff = None if cutoff is None else [float(v) for v in cutoff]
        self.n_features = int(n_features)
        self.probe_error_: float | None = None

    @property
    def feature_scale(self) -> float:
        return 1.0

    def fit(self, n_inputs: int, sample=None, box: tuple[np.ndarray, np.ndarray] | None = None):
        d = int(n_inputs)
        if d > MAX_DIM:
            raise UsageError(
                f"GLF features are for d <= {MAX_DIM} inputs (nodes grow as q^d); "
                f"this input has {d}: "
                "use random Fourier features (features='rff')"
            )
        lo, hi = self.lengthscale_bounds
        if self.cutoff is not None:
            L = np.broadcast_to(np.array(self.cutoff, dtype=float), (d,)).copy()
        else:
            L = np.full(d, cutoff_for(self.kernel_name, lo, self.tol / 10))
        if box is None:
            width = np.ones(d)
        else:
            width = np.maximum(np.asarray(box[1], float) - np.asarray(box[0], float), 1e-12)
        if self.nodes is not None:
            q = np.broadcast_to(np.array(self.nodes, dtype=int), (d,)).copy()
            if np.any(q < 2) or np.any(q % 2):
                raise UsageError(f"nodes must be even numbers >= 2, got {self.nodes}")
            H, w = half_space_nodes(L, q)
            err = self._probe_error(H, w, width)
        else:
            # start from per-dimension 1-D searches (exact for the separable Gaussian kernel,
            # a good start for Matern), then grow every q_j until the joint probe passes
            q = (
                np.array([self._search_1d(L[j], width[j], self.tol / d) for j in range(d)])
                if d > 1
                else np.full(1, 8)
            )
            while True:
                if np.prod(q) // 2 > MAX_NODES:
                    raise UsageError(
                        f"GLF needs more than {MAX_NODES} nodes for tol={self.tol:g} "
                        f"with lengthscales from {lo:g} to {hi:g} on this data range: narrow "
                        "lengthscale_bounds, loosen tol, set nodes/cutoff by hand, "
                        "or use features='rff'"
                    )
                H, w = half_space_nodes(L, q)
                err = self._probe_error(H, w, width)
                if err <= self.tol:
                    break
                q = q + 2 * np.maximum(q // 8, 1)  # grow ~25% per step, stay even
        self.H_, self.w_ = H, w
        self.q_, self.L_ = [int(v) for v in q], [float(v) for v in L]
        self.probe_error_ = float(err)
        self.n_features = 2 * len(w)
        self.n_inputs_ = d
        return self

    def _search_1d(self, L: float, width: float, tol: float) -> int:
        q = 8
        while q // 2 <= MAX_NODES:
            H, w = half_space_nodes(np.array([L]), np.array([q]))
            if self._probe_error(H, w, np.array([width])) <= tol:
                return q
            q += 2 * max(q // 8, 1)
        return q

    def _probe_error(self, H, w, width) -> float:
        """Max |k~ - k| over probe differences in the bounding box, at the smallest, a middle
        and the largest lengthscale (unit signal variance)."""
        rng = np.random.default_rng(self.seed)
        d = H.shape[1]
        delta = rng.uniform(-1, 1, (256, d)) * width
        delta = np.vstack([np.zeros(d), width, delta])
        lo, hi = self.lengthscale_bounds
        worst = 0.0
        for ell in (lo, np.sqrt(lo * hi), hi):
            approx = quadrature_kernel(self.kernel_name, H, w, delta, ell)
            exact = stationary_kernel(self.kernel_name, delta, np.zeros((1, d)), ell)[:, 0]
            worst = max(worst, float(np.abs(approx - exact).max()))
        return worst

    def transform_raw(self, X):
        self._check_fitted()
        Z = 2 * np.pi * (np.asarray(X, dtype=np.float64) @ self.H_.T)
        return np.hstack([np.cos(Z), np.sin(Z)]), None

    def weights(self, ell) -> np.ndarray:
        """Quadrature weight times spectral density per feature (cos and sin halves)."""
        ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (self.n_inputs_,))
        wp = self.w_ * np.exp(log_spectral_density(self.kernel_name, self.H_, ell))
        return np.concatenate([wp, wp])

    def kernel(self, X, Y):
        raise UsageError("a GLF map has no fixed kernel (its lengthscale is learned by GPR)")

    def params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel_name,
            "lengthscale_bounds": list(self.lengthscale_bounds),
            "tol": self.tol,
            "nodes": self.nodes,
            "cutoff": self.cutoff,
            "n_features": self.n_features,
        }

    def fitted_params(self) -> dict[str, Any]:
        return {"q": self.q_, "L": self.L_, "probe_error": self.probe_error_}

    def _check_arrays(self) -> None:
        if (
            self.H_.ndim != 2
            or self.H_.shape[1] != self.n_inputs_
            or self.w_.shape != (len(self.H_),)
        ):
            raise ConfigError("map glf: node arrays do not match")
        if self.n_features != 2 * len(self.w_):
            raise ConfigError("map glf: n_features does not match the nodes")

    def describe(self) -> str:
        L = [round(v, 4) for v in self.L_]
        return f"glf {self.kernel_name} (q={self.q_}, L={L}, {len(self.w_)} nodes)"
