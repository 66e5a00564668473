"""The row sample's checks of GP regression's levels: the features of the fitting pass's row
sample under a rule, kept for the last rule asked (the exact route's rank estimate and the
kernel error after learning share them), the kernel matrix's quadrature error on the
data (docs/gpr.md, The tolerance follows the noise), and the exact GP's scan of the row
sample over the whole bounds (the coarse rule's sample scan, the no-rule route's starts).
:class:`SampleChecks` is a part of :class:`rfcli.jobs.gpr_levels.Levels`, which it reads:
``s`` (GPRSettings), ``xy`` (the row sample), ``bounds``, ``clock``, ``progress``,
``report``, ``sample_best`` (set by the sample scan).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rfcli.jobs.gpr_learn import lml_margin, scan_grids, scan_report, timed
from rfcli.learn.gpr_search import exact_profile, polish, scan
from rfcli.learn.tiles import weighted_gram
from rfcli.maps import glf_rules
from rfcli.threads import one_blas_thread

if TYPE_CHECKING:
    from rfcli.maps.gauss_legendre import GaussLegendreMap


#: rows of the kernel error on the data: its k^2 m Gram product took 0.2-0.35 s at 1,000 rows
#: and 11,232 features; on the development set 500 rows give the estimate of 1,000 within
#: 5% on the 3-input sets (ames, diamonds), within 35% where it is below 1e-3 of the
#: noise/signal checks' thresholds (edct, faithfuld; docs/gpr.md)
ERROR_ROWS = 500


class SampleChecks:
    """The row sample's features and the kernel error on the data (module docstring)."""

    def _init_sample_checks(self) -> None:
        self._sample_map: GaussLegendreMap | None = None  # _sample_features' cache
        self._sample_F: np.ndarray | None = None
        self._sample_rank: tuple | None = None  # (map, its features' rank on the sample)
        self._probe_rank: tuple | None = None  # (map, the rank on the sample's first rows)

    def _exact_scan(self, st):
        """The exact GP's profiled LML on the row sample's first ``scan_rows`` rows (targets
        standardized by the pass's statistics ``st``) over the bounds' scan grids, reported
        as the sample scan: (X, y, the grids, the scan points)."""
        s = self.s
        xy = self.xy[: s.scan_rows]
        mu, sd, _, _ = st.standardized()
        X, y = xy[:, :-1], (xy[:, -1] - mu) / sd
        evaluate = exact_profile(X, y, s.kernel, s.signal_bounds, s.noise_bounds)
        grids = scan_grids(self.bounds)
        with timed(self.clock, "sample scan"), one_blas_thread():
            pts = scan(evaluate, grids, sweeps=1, progress=self.progress,
                       title=f"GP scan (exact GP on {len(xy)} sample rows)")  # fmt: skip
        self.report["sample_scan"] = scan_report(pts, f"exact GP on {len(xy)} sample rows")
        return X, y, grids, pts

    def _sample_scan(self, ranges: np.ndarray, st) -> dict | None:
        """Exact GP on the row sample over the whole bounds: its best point when that lies
        outside the coarse rule's ``ranges`` and beats the best point inside them by more than
        the margin (a start for the levels); else None."""
        s = self.s
        if len(self.xy[: s.scan_rows]) < 10:
            return None
        X, y, grids, pts = self._exact_scan(st)
        alone = exact_profile(X, y, s.kernel, s.signal_bounds, s.noise_bounds, concurrent=False)
        with timed(self.clock, "sample scan"), one_blas_thread():
            # the grid's best point, a factor 1.47 (1.78 with ARD) from the next, moved to
            # the sample's maximum between them: it centres the first level's rule
            # (ggplot2::diamonds: grid point 4.18, polished 3.58, optimum on all rows 3.05;
            # one level of 3,155 nodes where the grid point took two, 2,509 then 2,675)
            best = polish(alone, pts, grids)
        self.sample_best = np.asarray(best["ell"], dtype=float)
        lo, hi = ranges[:, 0] * 0.9999, ranges[:, 1] * 1.0001
        inside = [p for p in pts if np.all((p["ell"] >= lo) & (p["ell"] <= hi))]
        if np.all((best["ell"] >= lo) & (best["ell"] <= hi)):
            return None
        if inside and best["lml"] <= max(p["lml"] for p in inside) + lml_margin(len(X)):
            return None
        self.report["sample_scan"]["start"] = [float(v) for v in best["ell"]]
        return best

    def _data_error(self, fmap: GaussLegendreMap, ell: np.ndarray, n: int) -> float:
        """The kernel matrix's quadrature error on the data, in units of the signal variance:
        ``(n / k) ||K~_k - K_k||_2`` on the first k = ERROR_ROWS rows of the row sample (the
        spectral norm of an n x n matrix of a bounded kernel function grows as n times that
        of its operator on the data's distribution, which the sample's matrix / k
        estimates)."""
        X = self._sample_inputs[:ERROR_ROWS]
        with timed(self.clock, "kernel error on the data"), one_blas_thread():
            # all the sample's features, kept: the level's rank check uses them too
            F = self._sample_features(fmap)[: len(X)]
            E = weighted_gram(F, fmap.weights(ell))
            E -= glf_rules.stationary_kernel(self.s.kernel, X, X, ell)
            top = spectral_norm((E + E.T) / 2)
        return top * max(n, len(X)) / len(X)

    def _sample_features(self, fmap: GaussLegendreMap, rows: int | None = None) -> np.ndarray:
        """``fmap``'s features of the row sample's rows (the kernel error on the data, the
        rank estimate of the exact route), kept for the last map asked: a level's rank
        check and its kernel error after learning transform the sample once (1,000 rows of
        13,570 features are 108 MB).  ``rows``: the first rows only (not kept, unless the
        map's features are)."""
        if rows is not None and self._sample_map is not fmap:
            return fmap.transform(self._sample_inputs[:rows])
        if self._sample_map is not fmap:
            self._keep_sample_features(None)  # the previous map's go first
            self._sample_F = fmap.transform(self._sample_inputs)
            self._sample_map = fmap
        return self._sample_F if rows is None else self._sample_F[:rows]

    def _keep_sample_features(self, fmap: GaussLegendreMap | None) -> None:
        """Drop :meth:`_sample_features`' kept features unless they are ``fmap``'s."""
        if self._sample_map is not fmap or fmap is None:
            self._sample_map = self._sample_F = None

    @property
    def _sample_inputs(self) -> np.ndarray:
        """The preprocessed inputs of the row sample's first ``sample_rows`` rows."""
        return self.xy[: self.s.sample_rows, :-1]


def spectral_norm(E: np.ndarray, rel_tol: float = 1e-10) -> float:
    """The largest eigenvalue magnitude of a symmetric matrix, by Lanczos iteration with full
    reorthogonalization from a fixed seeded start vector (the same number at every call):
    the Ritz value of largest magnitude of the tridiagonal matrix T_j, checked every few
    steps, once its residual ``beta_j |s_j|`` (s_j its eigenvector's last entry: the
    distance to an eigenvalue of E; Golub & Van Loan, "Matrix Computations", 4th ed.,
    2013, section 10.1) is at most ``rel_tol`` of it.  1-3 ms for a 500 x 500 matrix where
    all its eigenvalues take 30 ms, and without SciPy's ARPACK, whose import (scipy.sparse)
    took 40-55 ms of a fit.  Small matrices take the full eigendecomposition."""
    n = E.shape[0]
    if n <= 64 or not np.any(E):
        return float(np.max(np.abs(np.linalg.eigvalsh(E)))) if n else 0.0
    Q = np.empty((n, n))
    q = np.random.default_rng(0).standard_normal(n)
    Q[:, 0] = q / np.linalg.norm(q)
    alpha, beta = np.zeros(n), np.zeros(n)
    for j in range(n):
        w = E @ Q[:, j]
        alpha[j] = Q[:, j] @ w
        w -= Q[:, : j + 1] @ (Q[:, : j + 1].T @ w)  # full reorthogonalization, twice
        w -= Q[:, : j + 1] @ (Q[:, : j + 1].T @ w)
        beta[j] = np.linalg.norm(w)
        if j % 4 == 3 or j == n - 1 or beta[j] == 0.0:
            T = np.diag(alpha[: j + 1]) + np.diag(beta[:j], 1) + np.diag(beta[:j], -1)
            theta, S = np.linalg.eigh(T)
            i = int(np.argmax(np.abs(theta)))
            top = abs(float(theta[i]))
            if beta[j] * abs(S[-1, i]) <= rel_tol * top or beta[j] == 0.0 or j == n - 1:
                return top
        Q[:, j + 1] = w / beta[j]
    return top  # pragma: no cover - the loop returns at j = n - 1
