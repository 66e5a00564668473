"""Orchestration of Gaussian-process regression: passes of sufficient statistics (from raw
data through a Gauss-Legendre or Fourier map, or from a store), hyperparameter learning
from the statistics (:mod:`rfcli.jobs.gpr_learn`), the weight posterior into a model file.

GLF: D = s^2 w p_ell(eta) changes with every hyperparameter, V is fixed, so learning costs
O(s^3) per step after a pass.  With default settings (docs/gpr.md) the fitting pass
(z-scores) keeps a hash sample of rows, from which the lengthscale bounds come
(:func:`rfcli.learn.gpr_search.data_bounds`); then a coarse rule's pass and scans, and
levels of rules around the optimum (:class:`rfcli.jobs.gpr_levels.Levels`).  RFF: the
lengthscale search redraws the features, one pass per step
(:func:`rfcli.jobs.gpr_learn.fit_rff`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcli.constraints import (
    Boolean,
    Even,
    Interval,
    ListOf,
    Null,
    Options,
    Range,
    Ranges,
    Rule,
    Validated,
    settings_check,
)
from rfcli.encoder import Encoder
from rfcli.encoder_fit import fit_preprocessing_on
from rfcli.errors import InputError, UsageError
from rfcli.io import location
from rfcli.io.readers import (
    ReadSettings,
    attach_label,
    iter_chunks,
    open_source,
    select_columns,
)
from rfcli.io.settings import check_on_nan
from rfcli.io.store import FeatureStore
from rfcli.jobs.encode import EncodeSettings
from rfcli.jobs.gpr_learn import Fit, GPInputs, fit_rff, learn_fixed
from rfcli.jobs.gpr_levels import Levels
from rfcli.jobs.passes import PassCount
from rfcli.jobs.resources import Resources
from rfcli.jobs.result import TrainResult, check_output, warn_if_not_converged
from rfcli.learn.data import RawData, StoreData
from rfcli.learn.gpr import (
    GPRModel,
    GPStats,
    constant_spectral,
    glf_spectral,
    lml_and_grad,
    pass_threads,
    posterior,
)
from rfcli.learn.gpr_search import (
    data_bounds,
)
from rfcli.learn.targets import Targets, target_shift
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.glf_rules import GLF_KERNELS
from rfcli.memory import physical_memory
from rfcli.progress import NullProgress, Progress
from rfcli.threads import one_blas_thread, tile_threads

_POS_INT = Interval("int", 1)


@dataclass
class GPRSettings(Validated):
    """What ``rfcli train --model gpr`` asks for; :meth:`validate` checks every field
    against ``_parameter_constraints`` (rfcli.constraints) before any work (docs/gpr.md).

    Parameters
    ----------
    features : {"glf", "rff"}, default="glf"
        Gauss-Legendre features (d <= 3 inputs) or random Fourier features.
    kernel : {"gaussian", "matern12", "matern32", "matern52"}, default="gaussian"
    learn : bool, default=True
        Learn the hyperparameters (rff: the lengthscale too, a pass per step); else unit
        signal, 0.1 noise and ``lengthscale``.
    ard : bool, default=False
        One lengthscale per input (GLF).
    lengthscale_bounds : (lo, hi), a (lo, hi) per input, or None, default=None
        In units of the (standardized) inputs; None: from the data's row sample.
    noise_bounds, signal_bounds : (lo, hi)
        Noise and signal variances, in units of the standardized target.
    lengthscale : float or None, default=None
        The fixed lengthscale with ``learn=False`` (None: the bounds' geometric mean).
    n_features : int, default=1024
        Random Fourier features (rff).
    tol : float, default=1e-3
        GLF's kernel error tolerance at the optimum (units of the signal variance);
        learning also keeps it at most 0.1 x the learned noise/signal, refining the rule.
    nodes, cutoff : list or None, default=None
        A GLF rule by hand: nodes per input (even) and the frequency cutoff per input.
    standardize : bool, default=True
        Z-score the inputs.
    starts : int, default=3
        Quasi-Newton starts: the best distinct points of the scan.
    seed : int, default=0
        Seed of the row sample and of the RFF draws.
    sample_rows : int, default=1000
        Rows of the fitting pass's sample (lengthscale bounds, the exact scan).
    scan_rows : int, default=500
        Rows of that sample the exact-GP scan uses.
    coarse_nodes : int, default=512
        Node budget of the coarse rule.
    max_levels : int, default=8
        Most levels of rules per group of starts.
    exact : bool, default=True
        Fit the exact GP of the rows (its n x n kernel matrix; a band for one input) where
        that costs less than a quadrature rule (small data, short lengthscales) and the rows
        fit the memory budget (docs/gpr.md, Exact GP); False: GLF rules throughout.
    """

    features: str = "glf"  # glf | rff
    kernel: str = "gaussian"
    learn: bool = True  # learn hyperparameters (rff: the lengthscale too, a pass per step)
    ard: bool = False
    #: lengthscale range (lo, hi), or one per input with ard; None: from the data's row sample
    lengthscale_bounds: Any = None
    noise_bounds: tuple[float, float] = (1e-6, 10.0)  # noise variance, standardized targets
    signal_bounds: tuple[float, float] = (1e-3, 1e3)
    lengthscale: float | None = None  # fixed lengthscale without --learn (default: geometric mid)
    n_features: int = 1024  # rff
    #: glf kernel error tolerance at the optimum (units of the signal variance); learning
    #: also keeps it at most NOISE_SHARE x the learned noise/signal (rfcli.jobs.gpr_tolerance)
    tol: float = 1e-3
    nodes: list[int] | None = None
    cutoff: list[float] | None = None
    standardize: bool = True
    starts: int = 3  # quasi-Newton starts: the best distinct points of the scan
    seed: int = 0
    sample_rows: int = 1000  # row sample of the fitting pass (bounds; exact scan)
    scan_rows: int = 500  # rows of that sample the exact scan uses
    coarse_nodes: int = 512  # node budget of the coarse rule
    max_levels: int = 8
    #: the exact GP of the rows where it costs less than a rule (docs/gpr.md, Exact GP)
    exact: bool = True

    _parameter_constraints = {
        "features": [Options("glf", "rff")],
        "kernel": [Options(*GLF_KERNELS)],
        "learn": [Boolean()],
        "ard": [Boolean()],
        "lengthscale_bounds": [Null(), Range(), Ranges()],
        "noise_bounds": [Range()],
        "signal_bounds": [Range()],
        "lengthscale": [Null(), Interval("real", 0, lo_open=True)],
        "n_features": [_POS_INT],
        "tol": [Interval("real", 0, 1, lo_open=True, hi_open=True)],
        "nodes": [Null(), ListOf(Even())],
        "cutoff": [Null(), ListOf(Interval("real", 0, lo_open=True))],
        "standardize": [Boolean()],
        "starts": [_POS_INT],
        "seed": [Interval("int", 0)],
        "sample_rows": [Interval("int", 2)],
        "scan_rows": [Interval("int", 2)],
        "coarse_nodes": [_POS_INT],
        "max_levels": [_POS_INT],
        "exact": [Boolean()],
    }
    _rules = (
        Rule(("ard", "features"), lambda ard, f: not (ard and f == "rff"),
             lambda n, ard, f: f"{n('ard')} needs {n('features')}='glf' (RFF-GPR learns one "
             "lengthscale)"),
    )  # fmt: skip


FEATURE_BLOCK_BYTES = 32 << 20


def _feature_rows(n_features: int, chunk_rows: int, n_rows: int | None = None) -> int:
    """Rows per chunk so that a float64 feature block stays near 32 MiB (GLF maps can have
    thousands of features).  With the row count known the chunks are made as equal as that
    allows: a pass's groups are whole chunks (:func:`rfcli.engines.base.pass_groups`), and
    3,000 rows of 1,783 features in chunks of 2,352 and 648 rows kept one thread busy four
    times as long as the other (DAAG::edcT's level pass: 0.44 s); two of 1,500 rows share
    the work.  Rows that one block would hold come in two chunks (of 256 rows at least), so
    that a pass that sums them (its Gram product on one thread a chunk) has two threads'
    work: ggplot2::txhousing's passes of 380-1,500 features on 3,000 rows, 0.43-0.47 ->
    0.33-0.35 s in all, its fit 2.20-2.23 -> 2.02-2.08 s.  The size follows the row and
    feature counts only, never the threads."""
    cap = max(256, min(chunk_rows, FEATURE_BLOCK_BYTES // (8 * n_features)))
    if n_rows:
        cap = min(cap, max(256, -(-n_rows // 2)))  # two chunks at least: two threads' work
        cap = -(-n_rows // -(-n_rows // cap))
    return cap


def _gp_pass(data, shift: float = 0.0, keep_rows: bool = True) -> GPStats:
    """GP sufficient statistics of ``data``'s rows (a pass function: additive); ``shift``:
    subtracted from the targets first, ``keep_rows``: see :class:`GPStats`."""
    st = GPStats(data.encoder.n_features, shift, keep_rows)
    for b in data.batches():
        st.update(b.F, np.asarray(b.y, dtype=np.float64))
    return st


def train_gpr(
    input_path,
    output: str | None = None,
    settings: GPRSettings | None = None,
    read: ReadSettings | None = None,
    *,
    y=None,
    overwrite: bool = False,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> TrainResult:
    """Fit a GP regression model on raw data (features computed on the fly) or a store.

    Parameters
    ----------
    input_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        Raw data (a path, or in-memory data with its label column ``read.label`` or the
        label ``y`` given apart), or a feature store (its map is then fixed).
    output : str or None, default=None
        The model file to write (``.npz``); None: nothing is written.
    settings : GPRSettings or None, default=None
        Features (GLF or RFF), kernel, bounds, tolerances.
    read : ReadSettings or None, default=None
        How raw input is read (label, columns, ``on_nan``).
    y : array-like or None, default=None
        The label given apart.
    overwrite : bool, default=False
        Replace an existing ``output``.
    threads : int or None, default=None
        Worker threads of the local engine (default: the available cores, at most 8); the
        model is the same for any number.
    memory : int or None, default=None
        Budget in bytes for the GP's arrays (default: physical memory); it bounds the GLF
        rule's nodes, and a rule that does not fit is refused with the memory it needs.
    engine : {"local", "dask"}, default="local"
        Where the data passes run.
    dask : DaskSettings or None, default=None
        The cluster of ``engine="dask"``.
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    TrainResult
        The model (posterior mean and variance), its report (learned hyperparameters, log
        marginal likelihood, passes) and encoder.

    Raises
    ------
    UsageError
        A bad setting, a rule that does not fit ``memory``.
    InputError
        Unreadable input, a missing label, no rows.
    OutputError
        ``output`` exists (without ``overwrite``) or cannot be written.
    """
    s = settings_check(settings, GPRSettings, "settings")
    read = settings_check(read, ReadSettings, "read")
    res = Resources(threads=threads, memory=memory, engine=engine, dask=dask)
    input_path, read = attach_label(input_path, y, read)
    check_on_nan(read.on_nan, engine)
    progress = progress or NullProgress()
    check_output(output, overwrite)
    with res.open(progress) as eng:
        return _train_gpr(input_path, output, s, read, eng, overwrite=overwrite)


def _train_gpr(input_path, output, s, read, eng, *, overwrite: bool) -> TrainResult:
    t0 = time.perf_counter()
    report: dict[str, Any] = {"model": "gpr", "features_kind": s.features, "kernel": s.kernel}
    clock = {"pass": 0.0}
    # the learning's dense products run on the job's threads, in tiles fixed by their
    # shapes (rfcli.learn.tiles): the same model on any number of them
    with tile_threads(eng.threads):
        if location.is_store(input_path):
            fit, label, passes = _fit_store(input_path, s, eng, report, clock)
        else:
            fit, label, passes = _fit_input(input_path, s, read, eng, report, clock)
        model = finish(fit, passes, s, eng, report, clock, t0)
    warn_if_not_converged(report, "GP hyperparameter learning")
    trained_on = {"input": location.name(input_path), "label": label}
    result = TrainResult(model, report, report["seconds"], fit.encoder, trained_on)
    if output is not None:
        result.save(output, overwrite=overwrite)
    return result


def finish(fit: Fit, passes: int, s: GPRSettings, eng, report, clock, t0: float) -> GPRModel:
    """The model (weight posterior, in y units) of what learning produced; completes
    ``report`` (its ``info``)."""
    st, red, spectral, theta = fit.st, fit.red, fit.spectral, fit.theta
    if fit.kind == "exact":  # rfcli.learn.gpr_exact: the model of its parts
        p = fit.exact_parts
        mu, sd, lml, lam, n, rank = p["mu"], p["sd"], p["lml"], p["lam"], p["rows"], p["rows"]
        var = {"cov_diag": np.zeros(len(p["weights"])), "prior": sd * sd * p["s2"]}
        form, factor = p["factor"]
        if form == "band":  # the model solves with K's band factor
            var.update(cov_band=factor, cov_scale=sd * p["s2"])
        else:
            factor *= sd  # s2 L^-1 in y units, in place (n x n)
            var["cov_factor"] = factor
        mean_w = p["weights"]
    else:
        mu, sd, _, _ = st.standardized()
        with one_blas_thread():
            lml, _ = lml_and_grad(theta, red, spectral, need_grad=False)
            mean_w, (cov_d, cov_x), lam = posterior(theta, red, spectral)
        var, n, rank = {"cov_diag": sd * sd * cov_d, "cov_factor": sd * cov_x}, st.n, red.r
    model = GPRModel(
        Targets("regression"), (sd * mean_w)[:, None], np.array([mu]), False,
        noise=sd * sd * lam, **var,
    )  # fmt: skip
    ell = np.exp(theta[1 : 1 + fit.n_ell]) if fit.n_ell else fit.ell_fixed
    iters = sum(h.get("iterations", 0) for h in fit.history)
    secs = time.perf_counter() - t0
    t_learn = secs - clock["pass"]
    report.update(
        {
            "rank": rank,
            "rows": n,
            "features": fit.encoder.n_features,
            "signal_variance": float(np.exp(theta[0]) * sd * sd),
            "lengthscale": [float(v) for v in ell],
            "noise_variance": float(lam * sd * sd),
            # log marginal likelihood of the original (unstandardized) targets
            "log_marginal_likelihood": float(lml - n * np.log(sd)),
            "iterations": int(iters),
            "learn_seconds": t_learn,
            # quasi-Newton time per iteration (scans, rule design and eigenbases apart: "timing")
            "seconds_per_iteration": _search_seconds(clock, t_learn) / iters if iters else 0.0,
            "data_passes": passes,
            "pass_seconds": clock["pass"],
            "timing": {k: round(v, 3) for k, v in clock.items()},
            "map": fit.encoder.fmap.describe(),
        }
    )
    if s.learn:
        report["starts"] = fit.history
    report["seconds"] = secs
    model.info = report
    return model


def _search_seconds(clock: dict, t_learn: float) -> float:
    """Seconds of the hyperparameter searches: GLF levels' quasi-Newton runs and profiled
    searches and the exact GP's (else all learning)."""
    keys = ("quasi-Newton", "profile search", "exact GP")
    if not any(k in clock for k in keys):
        return t_learn
    return sum(clock.get(k, 0.0) for k in keys)


# -- stores: the map is fixed -------------------------------------------------------------
def _fit_store(path, s: GPRSettings, eng, report, clock):
    """GP statistics of a store's decoded features (its map is fixed), one learning round."""
    store = FeatureStore(path)
    data = StoreData(store)
    if data.label_name is None:
        raise InputError(f"{path}: the store has no label column")
    t = time.perf_counter()
    first = store.labels(0, 1)
    shift = float(first[0]) if first is not None and len(first) else 0.0
    keep = GPStats.keeps_rows(data.n_rows, data.encoder.n_features)
    st = eng.passes(data).reduce(_gp_pass, target_shift(shift), keep,
                                 title="data pass 1: GP statistics")  # fmt: skip
    clock["pass"] += time.perf_counter() - t
    fmap = store.encoder.fmap
    kind = "glf" if fmap.kind == "glf" else "rff"
    with one_blas_thread():
        red = st.reduced()
    if kind == "glf":
        d = fmap.n_inputs_
        if s.lengthscale_bounds is not None:
            bounds, source = _settings_bounds(s, d), "settings"
        else:  # the lengthscales the store's rule serves
            ranges, _ = fmap.ranges()
            bounds = ranges if s.ard else np.array([[ranges[:, 0].max(), ranges[:, 1].min()]])
            if bounds[0, 0] > bounds[0, 1]:
                bounds = np.array([[ranges[:, 0].min(), ranges[:, 1].max()]])
            source = "map"
        report.update(lengthscale_bounds=bounds.tolist(), bounds_from=source)
        spectral = glf_spectral(fmap, s.ard)
        theta, history = learn_fixed(red, spectral, bounds, s, report, eng.progress)
        fit = Fit(store.encoder, st, red, spectral, theta, history, kind, len(bounds), [])
        return fit, data.label_name, 1
    if s.learn and s.features == "rff":
        report["note"] = "a store has a fixed map: the lengthscale is not learned (give raw data)"
    spectral = constant_spectral(store.encoder.n_features)
    theta, history = learn_fixed(red, spectral, np.zeros((0, 2)), s, report, eng.progress)
    gamma = getattr(fmap, "gamma_", None)
    ell = [float(1 / np.sqrt(2 * gamma))] if gamma else []
    return Fit(store.encoder, st, red, spectral, theta, history, kind, 0, ell), data.label_name, 1


def _settings_bounds(s: GPRSettings, d: int) -> np.ndarray:
    b = np.atleast_2d(np.asarray(s.lengthscale_bounds, dtype=float))
    n_ell = d if s.ard else 1
    if len(b) == 1:
        return np.tile(b, (n_ell, 1))
    if len(b) != n_ell:
        raise UsageError(f"lengthscale_bounds: {len(b)} ranges for {n_ell} lengthscale(s)")
    return b


# -- raw input ----------------------------------------------------------------------------
def _fit_input(path, s: GPRSettings, read: ReadSettings, eng, report, clock):
    """Raw input at ``path``: :func:`fit_source` on it."""
    label = read.label
    if label is None:
        raise UsageError("GPR on raw input needs label (the regression target column)")
    source = open_source(path, read.fmt, spool_stdin=True, delimiter=read.delimiter)
    try:
        eng.check_source(source)
        fit, passes = fit_source(source, s, read, eng, report, clock)
    finally:
        source.close()
    return fit, label, passes


def fit_source(source, s: GPRSettings, read: ReadSettings, eng, report, clock):
    """An open raw source: the fitting pass (z-scores, row sample), bounds, then GLF levels or
    the RFF lengthscale search.  Returns (what learning produced, data passes); ``finish``
    makes the model."""
    path = source.path
    sel = select_columns(source, read.columns, read.label, [])
    d = len(sel.features)
    if s.features == "glf" and d > 3:
        GaussLegendreMap().fit(d)  # refuses with the reason
    es = EncodeSettings(
        standardize=s.standardize,
        quantizer="none",
        bits=32,
        seed=s.seed,
        sample_rows=s.sample_rows,
    )
    t = time.perf_counter()
    pre, sample, n_rows = fit_preprocessing_on(eng, source, sel, es, read,
                                               title="fitting (pass 1/2)")  # fmt: skip
    clock["pass"] += time.perf_counter() - t
    base = GPInputs(sel.features, pre)
    if s.lengthscale_bounds is not None:
        bounds, src = _settings_bounds(s, d) if s.features == "glf" else _iso(s), "settings"
    else:
        bounds = data_bounds(sample, s.ard) if len(sample) > 1 else np.array([[1.0, 1.0]])
        src = "data"
    report.update(lengthscale_bounds=bounds.tolist(), bounds_from=src)

    made = PassCount(1)  # data passes: the fitting pass, then these
    shift = target_shift(_first_label(source, sel, read.on_nan))

    def stats(enc: Encoder, what: str, fn=_gp_pass, args=(), inputs: bool = False):
        """One pass of ``fn`` over the raw rows through ``enc`` (``inputs``: batches carry
        the preprocessed inputs too)."""
        n_rows = source.num_rows
        # at most as many rows in all as features (or an unknown count): the pass keeps them
        kept = GPStats.keeps_rows(n_rows, enc.n_features)
        if n_rows and kept:
            # every row known to be kept: one chunk of them all, kept as the map makes it
            # (no copy per chunk, no stacking of chunks: ggplot2::diamonds' level of 3,000
            # rows x 6,310 features wrote 151 MB twice, 0.4-0.6 s of fresh pages here)
            rows = n_rows
        else:
            rows = _feature_rows(enc.n_features + (d if inputs else 0), read.chunk_rows, n_rows)
        data = RawData(source, sel, enc, raw_features=True, chunk_rows=rows, on_nan=read.on_nan,
                       with_inputs=inputs)  # fmt: skip
        t = time.perf_counter()
        n_pass = made.add()
        threads = pass_threads(enc.n_features, eng.memory or physical_memory(), eng.threads)
        # more rows in all than features: the passes sum from the first row (GPStats); not
        # when rows may be dropped (the count before dropping could overstate them)
        keep = read.on_nan == "drop" or kept
        out = eng.passes(data, threads=threads).reduce(
            fn, *args, shift, keep, title=f"data pass {n_pass}: {what}"
        )
        clock["pass"] += time.perf_counter() - t
        if (out[0] if isinstance(out, tuple) else out).n == 0:
            raise InputError(f"{path}: no rows")
        return out

    if s.features == "rff":
        fit, passes = fit_rff(stats, base, bounds, s, report, eng.progress)
    else:
        fit, passes = Levels(stats, base, sample, bounds, s, report, clock, rows=n_rows,
                             progress=eng.progress, memory=eng.memory).run()  # fmt: skip
    return fit, 1 + passes


def _first_label(source, sel, on_nan: str) -> float:
    """The first kept row's target (row 0 unless ``on_nan=drop`` dropped it; nan: none)."""
    for chunk in iter_chunks(source, sel, 256, on_nan):
        if len(chunk.label):
            return float(chunk.label[0])
    return float("nan")


def _iso(s: GPRSettings) -> np.ndarray:
    b = np.atleast_2d(np.asarray(s.lengthscale_bounds, dtype=float))
    return np.array([[b[:, 0].min(), b[:, 1].max()]])
