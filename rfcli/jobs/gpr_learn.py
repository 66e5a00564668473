"""Learning a GP's hyperparameters from its statistics passes, the shared part: fixed
features (a store, a rule given by hand) scanned then refined by the quasi-Newton search,
and the RFF lengthscale search (a pass per step; Fink Shustin & Avron, "Gauss-Legendre Features for
Gaussian Process Regression", JMLR 2022, section 4.3; docs/methods.md).  GLF levels on raw
input are :mod:`rfcli.jobs.gpr_levels`.  ``s`` is the job's
:class:`~rfcli.jobs.train_gpr.GPRSettings`; ``stats(encoder, title, fn, args)`` makes one
pass (:func:`rfcli.jobs.train_gpr.fit_source`).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcli.encoder import Encoder
from rfcli.learn.gpr import (
    GPStats,
    Reduced,
    constant_spectral,
    glf_objective,
)
from rfcli.learn.gpr_optimize import fit_hyperparameters
from rfcli.learn.gpr_search import (
    glf_profile,
    lengthscale_grid,
    pick_starts,
    scan,
)
from rfcli.maps.base import FeatureMap
from rfcli.maps.fourier import FourierMap
from rfcli.quantize import make_quantizer
from rfcli.threads import one_blas_thread

#: grid density (lengthscales per decade) of the scans, isotropic and per ARD dimension
PER_DECADE_ISO, PER_DECADE_ARD = 6, 4


#: learning (scans, rule designs, eigendecompositions, searches) runs on one BLAS thread up
def rff_map(s, ell: float) -> FourierMap:
    return FourierMap(s.kernel, n_features=s.n_features, gamma=1.0 / (2.0 * ell * ell), seed=s.seed)


@contextmanager
def timed(clock: dict, key: str):
    t = time.perf_counter()
    try:
        yield
    finally:
        clock[key] = clock.get(key, 0.0) + time.perf_counter() - t


@dataclass
class Fit:
    """What learning produced: encoder and statistics of the final map, hyperparameters."""

    encoder: Encoder
    st: GPStats
    red: Reduced
    spectral: Any
    theta: np.ndarray
    history: list
    kind: str
    n_ell: int
    ell_fixed: list
    #: the exact GP's model parts (weights, s2, lam, factor: ExactGP.model_parts; the targets'
    #: mu and sd, the LML of the standardized targets, rows); st and red are then None
    exact_parts: dict | None = None


def scan_grids(bounds: np.ndarray, lower=None, upper=None) -> list[np.ndarray]:
    """Scan grids per lengthscale parameter over ``bounds`` (k, 2); with ``lower``/``upper``
    (the resolved lengthscales) those ends are grid points too."""
    per = PER_DECADE_ISO if len(bounds) == 1 else PER_DECADE_ARD
    out = []
    for j, (lo, hi) in enumerate(bounds):
        g = lengthscale_grid(lo, hi, per)
        extra = [v[j] for v in (lower, upper) if v is not None and lo < v[j] < hi]
        out.append(np.unique(np.concatenate([g, extra])))
    return out


def theta_of(point: dict) -> np.ndarray:
    return np.array([np.exp(point["log_s2"]), *point["ell"], np.exp(point["log_lam"])])


def learn_fixed(red, spectral, bounds, s, report, progress=None):
    """Fixed features (a store, given nodes): scan, then the quasi-Newton search within
    ``bounds`` from the best scan points; without ``s.learn`` the default hyperparameters."""
    with one_blas_thread():
        return _learn_fixed_inner(red, spectral, np.asarray(bounds), s, report, progress)


def _learn_fixed_inner(red, spectral, bounds, s, report, progress=None):
    n_ell = len(bounds)
    if not s.learn:
        ell0 = s.lengthscale or (float(np.sqrt(bounds[0, 0] * bounds[0, 1])) if n_ell else 1.0)
        return np.log([1.0, *([ell0] * n_ell), 0.1]), []
    if n_ell == 0:  # RFF store: s^2 and lambda only
        box, start = [s.signal_bounds, s.noise_bounds], [np.array([1.0, 0.1])]
        res, history = fit_hyperparameters(glf_objective(red, spectral), box, start,
                                           progress=progress,
                                           title="GP quasi-Newton (signal, noise)")  # fmt: skip
        return res.x, history
    pts = scan(glf_profile(red, spectral, s.signal_bounds, s.noise_bounds), scan_grids(bounds),
               progress=progress, title="GP scan (GLF statistics)")  # fmt: skip
    starts = pick_starts(pts, s.starts, lml_margin(red.n))
    report["scan"] = scan_report(pts, "GLF statistics")
    box = [s.signal_bounds, *[tuple(b) for b in bounds], s.noise_bounds]
    res, history = fit_hyperparameters(glf_objective(red, spectral), box,
                                       [theta_of(p) for p in starts],
                                       progress=progress)  # fmt: skip
    return res.x, history


def lml_margin(n: int) -> float:
    """LML margin (nats) within which distinct scan maxima are all tried."""
    return max(5.0, 0.005 * n)


def scan_report(pts: list[dict], what: str) -> dict:
    best = max(pts, key=lambda p: p["lml"])
    return {"on": what, "points": len(pts), "best_lengthscale": [float(v) for v in best["ell"]]}


@dataclass(frozen=True)
class GPInputs:
    """The inputs every GP pass reads: their columns and fitted preprocessing; a pass's
    encoder adds the map (unquantized features)."""

    columns: list
    preprocess: Any

    def encoder(self, fmap: FeatureMap) -> Encoder:
        return Encoder(self.columns, self.preprocess, fmap, make_quantizer("none", 32))


def fit_rff(stats, base: GPInputs, bounds: np.ndarray, s, report, progress=None):
    d = len(base.columns)
    lo, hi = float(bounds[:, 0].min()), float(bounds[:, 1].max())
    spectral = constant_spectral(s.n_features)
    if s.learn:
        enc, st, ell, extra = _learn_rff_lengthscale(stats, base, s, lo, hi)
        report.update(extra)
        passes = extra["passes"]
    else:
        ell = s.lengthscale or float(np.sqrt(lo * hi))
        enc = base.encoder(rff_map(s, ell).fit(d))
        st = stats(enc, "GP statistics")
        passes = 1
    with one_blas_thread():
        red = st.reduced()
    theta, history = learn_fixed(red, spectral, np.zeros((0, 2)), s, report, progress)
    return Fit(enc, st, red, spectral, theta, history, "rff", 0, [ell]), passes


def _learn_rff_lengthscale(stats, base: GPInputs, s, lo: float, hi: float):
    """Bounded 1-D search over log(lengthscale); each evaluation redraws the RFF map at that
    lengthscale (same seed: the draws are rescaled), makes a data pass for the statistics and
    maximizes the LML over s^2 and lambda from them, profiled (:func:`glf_profile`: one
    eigendecomposition of the r x r statistics, then O(r) per (s^2, lambda); L-BFGS-B on
    them took about 60 Cholesky factors per lengthscale: diamonds' first 4,000 training
    rows, 6 inputs, m = 1,024: 15.2 -> 10.3 s, the same test MSE to 6 digits; the 12
    passes' V'V products are most of the rest).  Returns the encoder and statistics at the
    optimum."""
    cache: dict[float, tuple] = {}
    spectral = constant_spectral(s.n_features)
    no_shape = np.zeros(0)  # RFF: no spectral shape parameters

    def evaluate(log_ell: float) -> float:
        ell = float(np.exp(log_ell))
        fmap = rff_map(s, ell).fit(len(base.columns))
        enc = base.encoder(fmap)
        st = stats(enc, f"RFF-GPR statistics (lengthscale {ell:.4g})")
        with one_blas_thread():
            lml = glf_profile(st.reduced(), spectral, s.signal_bounds, s.noise_bounds,
                              concurrent=False)(no_shape)[0]  # fmt: skip
        cache[log_ell] = (enc, st, ell, lml)
        return -lml

    t0 = time.perf_counter()
    from scipy.optimize import minimize_scalar  # lazily (CLI start-up)

    opt = minimize_scalar(
        evaluate, bounds=(np.log(lo), np.log(hi)), method="bounded", options={"xatol": 0.02}
    )
    enc, st, ell, lml = cache[min(cache, key=lambda k: -cache[k][3])]
    return (
        enc,
        st,
        ell,
        {
            "passes": len(cache),
            "lengthscale_search_seconds": time.perf_counter() - t0,
            "search_converged": bool(opt.success),
        },
    )
