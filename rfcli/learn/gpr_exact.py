"""The exact GP: hyperparameter learning and the predictive model on data held in memory
(docs/gpr.md, Exact GP; Rasmussen & Williams, "Gaussian Processes for Machine Learning",
MIT Press 2006, Sections 2.2 and 5.4.1).

GP regression takes this route where a Gauss-Legendre rule would need more features than
the data has rows: its cost per likelihood step, O(m r^2) with r <= n the rank of the
features' Gram matrix, then exceeds the exact GP's O(n^3), and the exact kernel has no
quadrature error.  The parameters are those of the GLF learner (rfcli.learn.gpr),
``theta = (log s2, log l..., log lambda)`` for standardized targets y:

    K = s2 C(l) + lambda I,   C_ik = k(r_ik),  r_ik^2 = sum_j (x_ij - x_kj)^2 / l_j^2
    LML = -1/2 y'K^-1 y - 1/2 log|K| - n/2 log 2 pi
    dLML/dtheta = 1/2 tr(W dK/dtheta),   W = alpha alpha' - K^-1,   alpha = K^-1 y
    dK/dlog s2 = s2 C,   dK/dlog lambda = lambda I,
    dK/dlog l_j = s2 h(r) o (x_j - x_j')^2 / l_j^2,   h = -2 dk/d(r^2)

(o: the elementwise product).  One Cholesky factor of K and its inverse per step, on one
BLAS thread (the model then never depends on the core count).
"""

from __future__ import annotations

import numpy as np

from rfcli.maps.exact import TrainingRowsMap, correlation, correlation_slope

LOG2PI = np.log(2 * np.pi)
#: n x n float64 arrays alive during a step besides the d squared-difference arrays
#: (scaled distances, kernel, factor, inverse, slope, a temporary)
EXACT_MATRICES = 6
#: the most rows the exact route takes, whatever the memory (one step at 16,384 rows is
#: about 1.5e12 flops)
EXACT_MAX_ROWS = 16_384


def exact_memory_need(n: int, d: int) -> int:
    """Bytes of an exact GP fit on n rows of d inputs."""
    return 8 * n * n * (EXACT_MATRICES + d)


def max_exact_rows(budget: int, d: int) -> int:
    """The most rows whose exact GP fit fits ``budget`` bytes (at most EXACT_MAX_ROWS)."""
    return int(min(EXACT_MAX_ROWS, np.sqrt(max(budget, 0) / (8 * (EXACT_MATRICES + d)))))


class ExactGP:
    """The exact GP of standardized targets ``y`` on preprocessed rows ``X`` (n, d), with
    one lengthscale (``ard=False``) or one per input."""

    def __init__(self, X: np.ndarray, y: np.ndarray, kernel: str, ard: bool):
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.kernel, self.ard = kernel, bool(ard)
        self.n, self.d = self.X.shape
        # squared differences per input, once (every step rescales them)
        self.D2 = [np.square(np.subtract.outer(c, c)) for c in self.X.T]

    def _parts(self, theta):
        s2, lam = np.exp(theta[0]), np.exp(theta[-1])
        ell = np.broadcast_to(np.exp(theta[1:-1]), (self.d,))
        R2 = np.zeros((self.n, self.n))
        for D2, lj in zip(self.D2, ell, strict=True):
            R2 += D2 * (1.0 / (lj * lj))
        C = correlation(self.kernel, R2)
        K = s2 * C
        K[np.diag_indices_from(K)] += lam
        return s2, lam, ell, R2, C, np.linalg.cholesky(K)

    def lml_and_grad(self, theta: np.ndarray, need_grad: bool = True):
        """Log marginal likelihood and its gradient in theta (module docstring); -inf where
        K is not numerically positive definite."""
        import scipy.linalg as sla  # where it computes: a model's predictions need no scipy

        theta = np.asarray(theta, dtype=np.float64)
        try:
            s2, lam, ell, R2, C, L = self._parts(theta)
        except np.linalg.LinAlgError:
            return -np.inf, np.zeros_like(theta)
        alpha = sla.cho_solve((L, True), self.y, check_finite=False)
        lml = -0.5 * self.y @ alpha - np.log(np.diag(L)).sum() - 0.5 * self.n * LOG2PI
        if not need_grad:
            return lml, None
        W, info = sla.lapack.dpotri(L, lower=1, overwrite_c=1)  # K^-1, lower triangle
        if info:
            return -np.inf, np.zeros_like(theta)
        W = np.tril(W)
        W += np.tril(W, -1).T
        np.subtract(np.outer(alpha, alpha), W, out=W)  # W = alpha alpha' - K^-1
        g = np.empty_like(theta)
        g[-1] = 0.5 * lam * np.trace(W)
        H = correlation_slope(self.kernel, R2, C)
        np.multiply(W, C, out=C)  # W o C
        g[0] = 0.5 * s2 * C.sum()
        W = C if H is C else np.multiply(W, H, out=H)  # W o h
        if not self.ard:
            g[1] = 0.5 * s2 * np.vdot(W, R2)
        else:
            for j, (D2, lj) in enumerate(zip(self.D2, ell, strict=True)):
                g[1 + j] = 0.5 * s2 / (lj * lj) * np.vdot(W, D2)
        return lml, g

    def model_parts(self, theta: np.ndarray):
        """At ``theta``: the map of the training rows, the weights ``s2 alpha`` and the
        variance factor ``s2 L^-1`` (K = L L'), so that for features c = c(x) the
        predictive mean is ``c's2 alpha`` and the variance ``s2 + lambda - |s2 L^-1 c|^2``
        (standardized units)."""
        import scipy.linalg as sla

        s2, lam, ell, _, _, L = self._parts(np.asarray(theta, dtype=np.float64))
        alpha = sla.cho_solve((L, True), self.y, check_finite=False)
        Linv, _ = sla.lapack.dtrtri(L, lower=1)
        fmap = TrainingRowsMap(kernel=self.kernel, lengthscale=ell if self.ard else ell[:1])
        return fmap.fit_rows(self.X), s2 * alpha, s2 * np.tril(Linv), s2, lam
