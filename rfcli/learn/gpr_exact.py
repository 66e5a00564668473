"""The exact GP: hyperparameter learning and the predictive model on data held in memory
(docs/gpr.md, Exact GP; Rasmussen & Williams, "Gaussian Processes for Machine Learning",
MIT Press 2006, Sections 2.2 and 5.4.1).

GP regression takes this route where it costs less than a Gauss-Legendre rule (small data,
many features of full rank, short lengthscales of a series: rfcli.jobs.gpr_exact_route,
ExactRoute._exact_cheaper), and the exact kernel has no quadrature error.  The parameters are
those of the GLF learner (rfcli.learn.gpr), ``theta = (log s2, log l..., log lambda)``
for standardized targets y:

    K = s2 C(l) + lambda I,   C_ik = k(r_ik),  r_ik^2 = sum_j (x_ij - x_kj)^2 / l_j^2
    LML = -1/2 y'K^-1 y - 1/2 log|K| - n/2 log 2 pi
    dLML/dtheta = 1/2 tr(W dK/dtheta),   W = alpha alpha' - K^-1,   alpha = K^-1 y
    dK/dlog s2 = s2 C,   dK/dlog lambda = lambda I,
    dK/dlog l_j = s2 h(r) o (x_j - x_j')^2 / l_j^2,   h = -2 dk/d(r^2)

(o: the elementwise product).  One Cholesky factor of K and its inverse per step, by
blocks and row tiles on the tile threads, each on one BLAS thread
(rfcli.learn.tiles.cholesky_lower and cholesky_inverse; the elementwise kernel work and the
gradient's sums by row tiles too): the model never depends on the core count, and a step at
3,000 rows (Matern 5/2) takes 0.69-0.76 s on 2 cores where LAPACK's dpotrf and dpotri on
one thread and the elementwise work whole took 1.15-1.23 s.

One input (a series): the rows are sorted, and where the kernel falls below BAND_EPS
within a few neighbours, K is a band matrix of half-width b (entries below BAND_EPS x s2
dropped: a change of K's spectral norm of at most n BAND_EPS s2, below double-precision
rounding of its entries' sums).  A step then costs O(n b^2): the band Cholesky factor
(LAPACK dpbtrf), and for the gradient only the band of K^-1, from the factor by the
backward recurrence of Takahashi, Fagan & Chin (Proc. 8th PICA Conference, 1973): with
K = L L',

    Z_ij = -(sum_{k=i+1}^{i+b} L_ki Z_kj) / L_ii   (j = i+1 .. i+b),
    Z_ii = (1 / L_ii - sum_{k=i+1}^{i+b} L_ki Z_ki) / L_ii,

each entry from entries of rows below it within the band.  Long lengthscales (a band
wider than n / BAND_SHARE) take the dense step.
"""

from __future__ import annotations

import numpy as np

from rfcli.learn.gpr_optimize import LMLTerms, lml_and_grad_of
from rfcli.learn.tiles import (
    cholesky_inverse,
    cholesky_lower,
    row_spans,
    tile_sum,
    triangular_inverse,
)
from rfcli.maps.exact import (
    TrainingRowsMap,
    correlation,
    correlation_slope,
    scaled_sum,
    squared_differences,
)
from rfcli.threads import run_tiles

#: n x n float64 arrays alive during a step besides the d squared-difference arrays
#: (scaled distances, kernel, factor, L^-1 and the inverse, the kernels' temporaries:
#: measured with tracemalloc at 1,500 rows, Matern 5/2 peaks at 8.2, the Gaussian at 5.4,
#: since the step's elementwise work and gradient go by row tiles; 9 and 7.3 before)
EXACT_MATRICES = 9
#: the most rows the exact route takes, whatever the memory (one step at 16,384 rows is
#: about 1.5e12 flops)
EXACT_MAX_ROWS = 16_384
#: one input: kernel entries below BAND_EPS (x s2) are dropped, and the band step is taken
#: while the band's half-width is at most n / BAND_SHARE
BAND_EPS, BAND_SHARE = 1e-16, 8
#: what a step's interpreter and memory-bound work costs in flops of its matrix products
#: (measured on 2 AMD EPYC cores: about 10 us per row of the band recurrence, 50 ms for
#: the elementwise kernel work of a dense step on 2,051 rows)
BAND_ROW_FLOPS, ENTRY_FLOPS = 2e4, 500.0


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
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.shape[1] == 1:  # a series: sorted rows make K a band matrix (module docstring)
            order = np.argsort(X[:, 0], kind="stable")
            X, y = X[order], y[order]
        self.X, self.y = X, y
        self.mu, self.sd = 0.0, 1.0  # the targets' scale (of_targets): y = (raw - mu) / sd
        self.kernel, self.ard = kernel, bool(ard)
        self.n, self.d = self.X.shape
        self._D2: list[np.ndarray] | None = None
        self.r_cut = _cut_radius(kernel) if self.d == 1 else np.inf

    @classmethod
    def of_targets(cls, X: np.ndarray, y: np.ndarray, kernel: str, ard: bool) -> ExactGP:
        """The exact GP of raw targets ``y``, standardized by their own mean and standard
        deviation (``mu``, ``sd``; summed in the rows' order)."""
        y = np.asarray(y, dtype=np.float64)
        mu = float(y.mean())
        sd = float(y.std()) or 1.0
        gp = cls(X, (y - mu) / sd, kernel, ard)
        gp.mu, gp.sd = mu, sd
        return gp

    @property
    def D2(self) -> list[np.ndarray]:
        """Squared differences per input (n x n each), once: every dense step rescales them;
        with one lengthscale, their sum alone (the squared distances: a step scales one
        array instead of summing d, 0.1 of its 1.1 s at 3,000 rows of 3 inputs)."""
        if self._D2 is None:
            self._D2 = squared_differences(self.X, per_input=self.ard)
        return self._D2

    def half_width(self, ell: float) -> int:
        """One input: the band's half-width at lengthscale ``ell`` (n - 1: no band)."""
        if self.d != 1:
            return self.n - 1
        x = self.X[:, 0]
        reach = np.searchsorted(x, x + self.r_cut * ell, side="right") - 1
        return int((reach - np.arange(self.n)).max())

    def band_width(self, ell: float) -> int | None:
        """One input: the band's half-width at lengthscale ``ell`` when a step there is a
        band step (at most n / BAND_SHARE), else None."""
        if self.d != 1:
            return None
        b = self.half_width(ell)
        return b if b * BAND_SHARE <= self.n else None

    def banded(self, ell: float) -> bool:
        return self.band_width(ell) is not None

    def band_limit(self, lo: float, hi: float) -> float:
        """One input: the longest lengthscale in [lo, hi] whose step is a band step (the
        half-width grows with the lengthscale), by bisection in log scale; lo when none."""
        if self.banded(hi):
            return hi
        if not self.banded(lo):
            return lo
        a, b = np.log(lo), np.log(hi)
        for _ in range(50):
            mid = 0.5 * (a + b)
            a, b = (mid, b) if self.banded(float(np.exp(mid))) else (a, mid)
        return float(np.exp(a))

    def step_flops(self, ell: float, band: bool = True) -> float:
        """About what one likelihood step costs at lengthscale ``ell``, in flops: 4/3 n^3
        dense (the factor and the inverse) and the kernel's elementwise work, 2 n b^2 in a
        band of half-width b plus the recurrence's per-row overhead (``band=False``: the
        dense step's)."""
        n = float(self.n)
        b = self.band_width(ell) if band else None
        if b is not None:
            return n * (2.0 * b**2 + BAND_ROW_FLOPS)
        return 4.0 / 3.0 * n**3 + ENTRY_FLOPS * n * n

    def _parts(self, theta):
        s2, lam = np.exp(theta[0]), np.exp(theta[-1])
        ell = np.broadcast_to(np.exp(theta[1:-1]), (self.d,))
        D2 = self.D2  # one array with one lengthscale, one per input with ARD
        R2, C, K = (np.empty((self.n, self.n)) for _ in range(3))

        def part(t: slice) -> None:  # elementwise: the same numbers in any tiles
            R2[t] = scaled_sum([Dj[t] for Dj in D2], ell[: len(D2)])
            C[t] = correlation(self.kernel, R2[t])
            np.multiply(C[t], s2, out=K[t])

        run_tiles(part, row_spans(self.n))
        K[np.diag_indices_from(K)] += lam
        return s2, lam, ell, R2, C, cholesky_lower(K)  # (K becomes L)

    def lml_and_grad(self, theta: np.ndarray, need_grad: bool = True):
        """Log marginal likelihood and its gradient in theta (module docstring); -inf where
        K is not numerically positive definite."""
        return lml_and_grad_of(self.terms(theta, need_grad), theta, need_grad)

    def terms(self, theta: np.ndarray, need_grad: bool = True) -> LMLTerms | None:
        """The likelihood's terms at theta (:class:`rfcli.learn.gpr_optimize.LMLTerms`);
        None where K is not numerically positive definite."""
        import scipy.linalg as sla  # where it computes: a model's predictions need no scipy

        theta = np.asarray(theta, dtype=np.float64)
        b = self.band_width(float(np.exp(theta[1])))
        if b is not None:
            return self._band_terms(theta, b, need_grad)
        try:
            s2, lam, ell, R2, C, L = self._parts(theta)
        except np.linalg.LinAlgError:
            return None
        alpha = sla.cho_solve((L, True), self.y, check_finite=False)
        quad, logdet = float(self.y @ alpha), 2.0 * np.log(np.diag(L)).sum()
        if not need_grad:
            return LMLTerms(quad, logdet, self.n)
        # K^-1's lower triangle, zeros above it: for a symmetric M, tr(K^-1 M) = 2 vdot(W, M)
        # - sum_i W_ii M_ii (no symmetric copy, three passes over n x n fewer)
        W = cholesky_inverse(L)
        w_diag = np.diag(W).copy()
        data, trace = np.empty_like(theta), np.empty_like(theta)
        data[-1], trace[-1] = lam * (alpha @ alpha), lam * w_diag.sum()  # dK/dlog lam = lam I
        data[0] = s2 * (alpha @ (C @ alpha))  # dK/dlog s2 = s2 C
        # dK/dlog ell_j = s2 H o D2_j / ell_j^2 (isotropic: s2 H o r^2)
        pairs = (
            [(R2, 1.0)]
            if not self.ard
            else [(D2, 1.0 / (lj * lj)) for D2, lj in zip(self.D2, ell, strict=True)]
        )
        kernel = self.kernel

        def part(t: slice) -> np.ndarray:
            """A row tile's sums: vdot(W, C), then per pair vdot(AA o H, M), vdot(W o H, M)
            (AA = alpha alpha'; M's diagonal: zero distances)."""
            H = correlation_slope(kernel, R2[t], C[t])  # may be C itself
            AH = np.multiply.outer(alpha[t], alpha)
            AH *= H
            WH = W[t] * H
            out = [np.vdot(W[t], C[t])]
            for M, _ in pairs:
                out += [np.vdot(AH, M[t]), np.vdot(WH, M[t])]
            return np.array(out)

        sums = tile_sum(part, row_spans(self.n))  # by row tiles, in their order
        trace[0] = s2 * (2.0 * sums[0] - w_diag @ np.diag(C))
        for j, (_, f) in enumerate(pairs):
            data[1 + j] = s2 * f * sums[1 + 2 * j]
            trace[1 + j] = 2.0 * s2 * f * sums[2 + 2 * j]
        return LMLTerms(quad, logdet, self.n, data, trace)

    def _band(self, theta, b: int):
        """One input: the band diagonals t = 0..b of r^2 and C (``b``: the half-width at
        theta's lengthscale), and K's band factor."""
        from scipy.linalg import cholesky_banded

        s2, lam, ell = np.exp(theta[0]), np.exp(theta[-1]), float(np.exp(theta[1]))
        x, n = self.X[:, 0] / ell, self.n
        R2 = [np.square(x[t:] - x[: n - t]) for t in range(b + 1)]
        C = [correlation(self.kernel, r2) for r2 in R2]
        ab = np.zeros((b + 1, n))
        for t, c in enumerate(C):
            ab[t, : n - t] = s2 * c
        ab[0] += lam
        return s2, lam, ell, R2, C, cholesky_banded(ab, lower=True, check_finite=False)

    def _band_terms(self, theta: np.ndarray, b: int, need_grad: bool) -> LMLTerms | None:
        from scipy.linalg import cho_solve_banded

        try:
            s2, lam, ell, R2, C, cb = self._band(theta, b)
        except np.linalg.LinAlgError:
            return None
        n = self.n
        alpha = cho_solve_banded((cb, True), self.y, check_finite=False)
        quad, logdet = float(self.y @ alpha), 2.0 * np.log(cb[0]).sum()
        if not need_grad:
            return LMLTerms(quad, logdet, n)
        Z = _band_inverse(cb)
        data, trace = np.zeros_like(theta), np.zeros_like(theta)
        data[-1], trace[-1] = lam * (alpha @ alpha), lam * np.trace(Z)
        for t in range(b + 1):
            w = s2 * (1.0 if t == 0 else 2.0)  # the band's two triangles
            at, zt = alpha[t:] * alpha[: n - t], np.diagonal(Z, t)  # of alpha alpha', K^-1
            slope = correlation_slope(self.kernel, R2[t], C[t]) * R2[t]
            data[0] += w * (at @ C[t])
            trace[0] += w * (zt @ C[t])
            data[1] += w * (at @ slope)
            trace[1] += w * (zt @ slope)
        return LMLTerms(quad, logdet, n, data, trace)

    def model_parts(self, theta: np.ndarray):
        """At ``theta``: (the map of the training rows, the weights ``s2 alpha``, s2, lambda,
        the variance's factor), so that for features c = c(x) the predictive mean is
        ``c's2 alpha`` and the variance ``s2 + lambda - s2^2 |L^-1 c|^2`` (standardized
        units, K = L L').  The factor: ``("inverse", s2 L^-1)`` (n x n), or for a band
        ``("band", L's band)`` in LAPACK lower band storage, which the model solves with."""
        import scipy.linalg as sla

        theta = np.asarray(theta, dtype=np.float64)
        b = self.band_width(float(np.exp(theta[1])))
        if b is not None:
            s2, lam, ell, _, _, cb = self._band(theta, b)
            alpha = sla.cho_solve_banded((cb, True), self.y, check_finite=False)
            factor, ell = ("band", cb), np.array([ell])
        else:
            s2, lam, ell, _, _, L = self._parts(theta)
            alpha = sla.cho_solve((L, True), self.y, check_finite=False)
            Linv = triangular_inverse(L)  # by blocks on the tile threads (zeros above)
            factor = ("inverse", Linv * s2)
        fmap = TrainingRowsMap(kernel=self.kernel, lengthscale=ell if self.ard else ell[:1])
        return fmap.fit_rows(self.X), s2 * alpha, s2, lam, factor


def _cut_radius(kernel: str) -> float:
    """The scaled distance r beyond which the unit kernel is below BAND_EPS (bisection)."""
    lo, hi = 0.0, 1.0
    while correlation(kernel, np.array(hi * hi)) > BAND_EPS:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if correlation(kernel, np.array(mid * mid)) > BAND_EPS else (lo, mid)
    return hi


def _band_inverse(cb: np.ndarray) -> np.ndarray:
    """K^-1 within the band (n x n; entries outside the band are left unset) from K's band
    Cholesky factor in LAPACK's lower band storage (``cb[t, i] = L[i + t, i]``), by the
    backward recurrence of the module docstring."""
    b1, n = cb.shape
    Z = np.empty((n, n))
    for i in range(n - 1, -1, -1):
        w = min(b1 - 1, n - 1 - i)
        d = cb[0, i]
        if w:
            v = cb[1 : w + 1, i]
            z = v @ Z[i + 1 : i + w + 1, i + 1 : i + w + 1]
            z /= -d
            Z[i, i + 1 : i + w + 1] = z
            Z[i + 1 : i + w + 1, i] = z
            Z[i, i] = (1.0 / d - v @ z) / d
        else:
            Z[i, i] = 1.0 / (d * d)
    return Z
