"""Orchestration of Gaussian-process regression: one pass of sufficient statistics (from raw
data through a Gauss-Legendre or Fourier map, or from a store), hyperparameter learning
from the statistics, the weight posterior into a model file.

GLF: D = s^2 w p_ell(eta) changes with every hyperparameter, V is fixed, so learning costs
O(s^3) per step after the pass.  RFF baseline: a fixed map learns s^2 and lambda from the
statistics; learning the lengthscale too redraws (rescales) the features, one data pass
per step (Fink Shustin & Avron, "Gauss-Legendre Features for Gaussian Process
Regression", JMLR 2022, section 4.3; docs/methods.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcli.encoder import Encoder
from rfcli.encoder_fit import EncodeSettings
from rfcli.engines import open_engine
from rfcli.errors import InputError, UsageError
from rfcli.io import location
from rfcli.io.readers import ReadSettings, open_source, select_columns
from rfcli.io.store import FeatureStore
from rfcli.jobs.train import TrainResult, check_output
from rfcli.learn.data import RawData, StoreData
from rfcli.learn.gpr import (
    GPRModel,
    GPStats,
    Reduced,
    constant_spectral,
    fit_hyperparameters,
    glf_spectral,
    lml_and_grad,
    posterior,
)
from rfcli.learn.model_file import save_model
from rfcli.learn.targets import Targets
from rfcli.maps.fourier import FourierMap
from rfcli.maps.gauss_legendre import GLF_KERNELS, GaussLegendreMap
from rfcli.progress import NullProgress, Progress
from rfcli.quantize import make_quantizer


@dataclass
class GPRSettings:
    features: str = "glf"  # glf | rff
    kernel: str = "gaussian"
    learn: bool = True  # learn hyperparameters (rff: the lengthscale too, a pass per step)
    ard: bool = False
    lengthscale_bounds: tuple[float, float] = (0.05, 2.0)
    noise_bounds: tuple[float, float] = (1e-6, 10.0)  # noise variance, standardized targets
    signal_bounds: tuple[float, float] = (1e-3, 1e3)
    lengthscale: float | None = None  # fixed lengthscale without --learn (default: geometric mid)
    n_features: int = 1024  # rff
    tol: float = 1e-3  # glf probe tolerance
    nodes: list[int] | None = None
    cutoff: list[float] | None = None
    standardize: bool = True
    starts: int = 3
    seed: int = 0


def _check(s: GPRSettings) -> None:
    if s.features not in ("glf", "rff"):
        raise UsageError(f"features must be 'glf' or 'rff', got {s.features!r}")
    if s.kernel not in GLF_KERNELS:
        raise UsageError(
            f"kernel must be one of {', '.join(GLF_KERNELS)} for GPR, got {s.kernel!r}"
        )
    for name, (lo, hi) in (("lengthscale", s.lengthscale_bounds), ("noise", s.noise_bounds)):
        if not 0 < lo <= hi:
            raise UsageError(f"{name}_bounds must satisfy 0 < lo <= hi, got ({lo}, {hi})")
    if s.features == "rff" and s.ard:
        raise UsageError("ard needs features='glf' (RFF-GPR learns one lengthscale)")


def _glf_map(s: GPRSettings) -> GaussLegendreMap:
    return GaussLegendreMap(
        kernel=s.kernel,
        lengthscale_bounds=s.lengthscale_bounds,
        tol=s.tol,
        nodes=s.nodes,
        cutoff=s.cutoff,
        seed=s.seed,
    )


def _rff_map(s: GPRSettings, ell: float) -> FourierMap:
    return FourierMap(s.kernel, n_features=s.n_features, gamma=1.0 / (2.0 * ell * ell), seed=s.seed)


FEATURE_BLOCK_BYTES = 32 << 20


def _feature_rows(n_features: int, chunk_rows: int) -> int:
    """Rows per chunk so that a float64 feature block stays near 32 MiB (GLF maps can have
    thousands of features)."""
    return max(256, min(chunk_rows, FEATURE_BLOCK_BYTES // (8 * n_features)))


def _gp_pass(data) -> GPStats:
    """GP sufficient statistics of ``data``'s rows (a pass function: additive)."""
    st = GPStats(data.encoder.n_features)
    for b in data.batches():
        st.update(b.F, np.asarray(b.y, dtype=np.float64))
    return st


def train_gpr(
    input_path: str,
    output: str | None,
    settings: GPRSettings | None = None,
    read: ReadSettings | None = None,
    *,
    overwrite: bool = False,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> TrainResult:
    """Fit a GP regression model on raw data (features computed on the fly) or a store;
    write it to ``output`` (if given).  ``engine="dask"``: the passes run on a Dask cluster
    (``dask``: its :class:`~rfcli.engines.dask.DaskSettings`)."""
    s = settings or GPRSettings()
    _check(s)
    read = read or ReadSettings()
    progress = progress or NullProgress()
    check_output(output, overwrite)
    with open_engine(engine, dask, progress) as eng:
        return _train_gpr(input_path, output, s, read, eng, overwrite, progress)


def _train_gpr(input_path, output, s, read, eng, overwrite, progress) -> TrainResult:
    t0 = time.perf_counter()
    report: dict[str, Any] = {"model": "gpr", "features_kind": s.features, "kernel": s.kernel}
    lo, hi = s.lengthscale_bounds
    ell0 = s.lengthscale or float(np.sqrt(lo * hi))
    if location.is_store(input_path):
        encoder, st, label, kind, passes, ell0 = _stats_from_store(input_path, s, eng, report, ell0)
    else:
        encoder, st, label, kind, passes, ell0 = _stats_from_input(input_path, s, read, eng,
                                                                   report, ell0)  # fmt: skip
    t_pass = time.perf_counter() - t0
    mu, sd, c, yty = st.standardized()
    if kind == "glf":
        spectral = glf_spectral(encoder.fmap, s.ard)
        n_ell = encoder.fmap.n_inputs_ if s.ard else 1
    else:
        spectral = constant_spectral(encoder.n_features)
        n_ell = 0
    t1 = time.perf_counter()
    red = Reduced(st.G, c, yty, st.n)
    theta, history = _learn(red, spectral, n_ell, ell0, s)
    if s.learn:
        report["starts"] = history
    t_learn = time.perf_counter() - t1
    lml, _ = lml_and_grad(theta, red, spectral, need_grad=False)
    mean_w, cov_w, lam = posterior(theta, red, spectral)
    model = GPRModel(
        Targets("regression"),
        (sd * mean_w)[:, None],
        np.array([mu]),
        False,
        cov=sd * sd * cov_w,
        noise=sd * sd * lam,
    )
    ell = np.exp(theta[1 : 1 + n_ell]) if n_ell else ([ell0] if kind == "rff" else [])
    iters = sum(h.get("iterations", 0) for h in history)
    report.update(
        {
            "rank": red.r,
            "rows": st.n,
            "features": encoder.n_features,
            "signal_variance": float(np.exp(theta[0]) * sd * sd),
            "lengthscale": [float(v) for v in ell],
            "noise_variance": float(lam * sd * sd),
            # log marginal likelihood of the original (unstandardized) targets
            "log_marginal_likelihood": float(lml - st.n * np.log(sd)),
            "iterations": int(iters),
            "learn_seconds": t_learn,
            "seconds_per_iteration": t_learn / max(iters, 1) if s.learn else 0.0,
            "data_passes": passes,
            "pass_seconds": t_pass,
            "map": encoder.fmap.describe(),
        }
    )
    secs = time.perf_counter() - t0
    report["seconds"] = secs
    model.info = report
    if output is not None:
        trained_on = {"trained_on": {"input": input_path, "label": label}}
        save_model(output, model, encoder, trained_on, overwrite=overwrite)
    return TrainResult(model, report, secs)


def _stats_from_store(path, s: GPRSettings, eng, report, ell0):
    """GP statistics of a store's decoded features (its map is fixed)."""
    store = FeatureStore(path)
    data = StoreData(store)
    if data.label_name is None:
        raise InputError(f"{path}: the store has no label column")
    st = eng.passes(data).reduce(_gp_pass, title="GP statistics")
    kind = "glf" if store.encoder.fmap.kind == "glf" else "rff"
    if kind == "rff" and s.learn and s.features == "rff":
        report["note"] = "a store has a fixed map: the lengthscale is not learned (give raw data)"
    return store.encoder, st, data.label_name, kind, 1, ell0


def _stats_from_input(path, s: GPRSettings, read: ReadSettings, eng, report, ell0):
    """GP statistics of raw input through a map fitted on it (GLF, or RFF with the
    lengthscale searched by one pass per step)."""
    label = read.label
    if label is None:
        raise UsageError("GPR on raw input needs label (the regression target column)")
    source = open_source(path, read.fmt, spool_stdin=True)
    try:
        eng.check_source(source)
        sel = select_columns(source, read.columns, label, [])
        es = EncodeSettings(standardize=s.standardize, quantizer="none", bits=32, seed=s.seed)
        fmap = _glf_map(s) if s.features == "glf" else _rff_map(s, ell0)
        encoder = eng.fit_encoder(source, sel, es, read, fmap=fmap)
        passes = 2 if s.standardize or fmap.needs_box else 1

        def stats(enc: Encoder, what: str) -> GPStats:
            rows = _feature_rows(enc.n_features, read.chunk_rows)
            data = RawData(source, sel, enc, raw_features=True, chunk_rows=rows,
                           on_nan=read.on_nan)  # fmt: skip
            st = eng.passes(data).reduce(_gp_pass, title=what)
            if st.n == 0:
                raise InputError(f"{path}: no rows")
            return st

        if s.features == "rff" and s.learn:
            encoder, st, ell0, extra = _learn_rff_lengthscale(stats, encoder, s)
            passes += extra["passes"]
            report.update(extra)
        else:
            st = stats(encoder, "GP statistics")
    finally:
        source.close()
    return encoder, st, label, s.features, passes, ell0


def _learn(red: Reduced, spectral, n_ell: int, ell0: float, s: GPRSettings):
    """The hyperparameters (log space) and the optimizer's history: L-BFGS-B from
    ``s.starts`` lengthscales spread over the bounds, or fixed ones without ``s.learn``."""
    if not s.learn:
        return np.log([1.0, *([ell0] * n_ell), 0.1]), []
    lo, hi = s.lengthscale_bounds
    bounds = [s.signal_bounds, *([s.lengthscale_bounds] * n_ell), s.noise_bounds]
    ells = np.geomspace(lo, hi, s.starts + 2)[1:-1] if n_ell else [None]
    starts = [np.array([1.0, *([e] * n_ell), 0.1]) for e in ells]
    res, history = fit_hyperparameters(red, spectral, bounds, starts)
    return res.x, history


def _learn_rff_lengthscale(stats, encoder: Encoder, s: GPRSettings):
    """Bounded 1-D search over log(lengthscale); each evaluation redraws the RFF map at that
    lengthscale (same seed: the draws are rescaled), makes a data pass for the statistics and
    learns s^2 and lambda from them.  Returns the encoder and statistics at the optimum."""
    lo, hi = s.lengthscale_bounds
    cache: dict[float, tuple] = {}
    spectral = constant_spectral(s.n_features)
    bounds = [s.signal_bounds, s.noise_bounds]

    def evaluate(log_ell: float) -> float:
        ell = float(np.exp(log_ell))
        fmap = _rff_map(s, ell).fit(len(encoder.columns))
        enc = Encoder(encoder.columns, encoder.preprocess, fmap, make_quantizer("none", 32))
        st = stats(enc, f"RFF-GPR pass (lengthscale {ell:.4g})")
        mu, sd, c, yty = st.standardized()
        res, _ = fit_hyperparameters(
            Reduced(st.G, c, yty, st.n), spectral, bounds, [np.array([1.0, 0.1])]
        )
        cache[log_ell] = (enc, st, ell, -res.fun)
        return res.fun

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
