"""``GLFRegressor``: GP regression with learned hyperparameters (``rfcli train --model gpr``)
on in-memory rows."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from rfcli.errors import UsageError
from rfcli.io.arrays import ARRAY_PATH, ArraySource
from rfcli.sklearn._common import (
    DTYPES,
    LABEL,
    RFEstimator,
    as_json,
    columns_of,
    label_name,
    seed_of,
)

#: GLF's limit on the input dimension (rfcli.maps.gauss_legendre.MAX_DIM)
GLF_MAX_DIM = 3


def fit_gpr(source, s, read):
    """GP regression on a source, as ``rfcli.train_gpr`` on a file with the same rows:
    returns (GPRModel, Encoder, report).

    This is ``rfcli.jobs.train_gpr._train_gpr`` with ``_fit_input``'s passes made over
    ``source`` instead of a source opened from a path (the job opens its input by path);
    every step calls the job's own functions."""
    from rfcli.encoder_fit import EncodeSettings
    from rfcli.engines import open_engine
    from rfcli.errors import InputError
    from rfcli.io.readers import select_columns
    from rfcli.jobs import train_gpr as job
    from rfcli.learn.data import RawData
    from rfcli.learn.gpr import GPRModel, lml_and_grad, posterior
    from rfcli.learn.gpr_search import data_bounds
    from rfcli.learn.targets import Targets
    from rfcli.maps.gauss_legendre import GaussLegendreMap
    from rfcli.progress import NullProgress

    job._check(s)
    t0 = time.perf_counter()
    report: dict[str, Any] = {"model": "gpr", "features_kind": s.features, "kernel": s.kernel}
    clock = {"pass": 0.0}
    path = source.path
    with open_engine("local", progress=NullProgress()) as eng:
        # -- job._fit_input, after its open_source --
        sel = select_columns(source, read.columns, read.label, [])
        d = len(sel.features)
        if s.features == "glf" and d > GLF_MAX_DIM:
            GaussLegendreMap().fit(d)  # refuses with the reason
        es = EncodeSettings(standardize=s.standardize, quantizer="none", bits=32, seed=s.seed,
                            sample_rows=s.sample_rows)  # fmt: skip
        t = time.perf_counter()
        base = eng.fit_encoder(source, sel, es, read, fmap=job.RowSample(0, s.seed))
        clock["pass"] += time.perf_counter() - t
        sample = base.fmap.sample_
        if sample is None or len(sample) == 0:
            raise InputError(f"{path}: no rows")
        if s.lengthscale_bounds is not None:
            bounds = job._settings_bounds(s, d) if s.features == "glf" else job._iso(s)
            src = "settings"
        else:
            bounds = data_bounds(sample, s.ard) if len(sample) > 1 else np.array([[1.0, 1.0]])
            src = "data"
        report.update(lengthscale_bounds=bounds.tolist(), bounds_from=src)

        def stats(enc, what: str, fn=job._gp_pass, args=()):
            rows = job._feature_rows(enc.n_features, read.chunk_rows)
            data = RawData(source, sel, enc, raw_features=True, chunk_rows=rows,
                           on_nan=read.on_nan)  # fmt: skip
            t = time.perf_counter()
            out = eng.passes(data).reduce(fn, *args, title=what)
            clock["pass"] += time.perf_counter() - t
            if (out[0] if isinstance(out, tuple) else out).n == 0:
                raise InputError(f"{path}: no rows")
            return out

        if s.features == "rff":
            fit, passes = job._fit_rff(stats, base, bounds, s, report)
        else:
            fit, passes = job._Levels(stats, base, sample, bounds, s, report, clock).run()
        passes += 1
    # -- job._train_gpr, after _fit_input --
    st, red, spectral, theta = fit.st, fit.red, fit.spectral, fit.theta
    mu, sd, _, _ = st.standardized()
    lml, _ = lml_and_grad(theta, red, spectral, need_grad=False)
    mean_w, cov_w, lam = posterior(theta, red, spectral)
    model = GPRModel(Targets("regression"), (sd * mean_w)[:, None], np.array([mu]), False,
                     cov=sd * sd * cov_w, noise=sd * sd * lam)  # fmt: skip
    ell = np.exp(theta[1 : 1 + fit.n_ell]) if fit.n_ell else fit.ell_fixed
    iters = sum(h.get("iterations", 0) for h in fit.history)
    secs = time.perf_counter() - t0
    t_learn = secs - clock["pass"]
    report.update(
        {
            "rank": red.r,
            "rows": st.n,
            "features": fit.encoder.n_features,
            "signal_variance": float(np.exp(theta[0]) * sd * sd),
            "lengthscale": [float(v) for v in ell],
            "noise_variance": float(lam * sd * sd),
            "log_marginal_likelihood": float(lml - st.n * np.log(sd)),
            "iterations": int(iters),
            "learn_seconds": t_learn,
            "seconds_per_iteration": clock.get("L-BFGS-B", t_learn) / iters if iters else 0.0,
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
    return model, fit.encoder, report


def _rule_too_large(e: Exception) -> bool:
    """Whether GP fitting stopped because a GLF rule exceeds the node budget (the job
    raises a UsageError naming the lengthscales, from the map's RuleTooLarge)."""
    from rfcli.maps.gauss_legendre import RuleTooLarge

    return isinstance(e, RuleTooLarge) or isinstance(e.__context__, RuleTooLarge)


class GLFRegressor(RegressorMixin, RFEstimator):
    """Gaussian-process regression with hyperparameters learned by maximizing the log
    marginal likelihood, on Gauss-Legendre features for d <= 3 inputs and random Fourier
    features beyond (Fink Shustin & Avron, "Gauss-Legendre Features for Gaussian Process
    Regression", JMLR 2022; Rahimi & Recht, NeurIPS 2007), as ``rfcli train --model gpr``:
    one pass accumulates ``V'V``, ``V'y`` and the sums, and every likelihood evaluation
    after it is independent of n (RFF: the lengthscale search makes one pass per trial).

    Parameters
    ----------
    kernel : {"gaussian", "matern12", "matern32", "matern52"}, default="gaussian"
    features : {"auto", "glf", "rff"}, default="auto"
        "auto": GLF for d <= 3 inputs, RFF beyond (GLF's node count grows as the product
        over the dimensions), and RFF (with a warning) when the GLF rule the data and
        bounds need exceeds GLF's budget of 3000 nodes; ``features_`` says which.
    ard : bool, default=False
        One lengthscale per input (GLF only).
    lengthscale_bounds : (lo, hi), one (lo, hi) per input, or None, default=None
        In units of the (standardized) inputs; None: from the data's row sample.
    noise_bounds, signal_bounds : (lo, hi)
        Noise and signal variances, in units of the standardized target.
    n_features : int, default=1024
        Random Fourier features (features="rff").
    tol : float, default=1e-3
        GLF's kernel approximation tolerance (units of the signal variance).
    standardize : bool, default=True
        Z-score the inputs.
    learn : bool, default=True
        Learn the hyperparameters (else: unit signal, 0.1 noise, ``lengthscale``).
    lengthscale : float or None, default=None
        The fixed lengthscale when ``learn=False`` (default: the bounds' geometric mean).
    random_state : int, RandomState or None, default=0

    Attributes
    ----------
    features_ : str
        "glf" or "rff": the features used.
    lengthscale_ : ndarray
        Learned lengthscale(s), in standardized input units (one per input with ard).
    signal_variance_, noise_variance_ : float
        In y units.
    log_marginal_likelihood_ : float
        Of the training targets (y units) at the learned hyperparameters.
    report_ : dict
        The training report (levels, scans, starts), as in the model file.
    encoder_, model_ : the rfcli Encoder and GPRModel.
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> from rfcli.sklearn import GLFRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 10, size=(300, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> gp = GLFRegressor(lengthscale_bounds=(0.05, 2.0)).fit(X, y)
    >>> gp.features_, bool(0.1 < gp.lengthscale_[0] < 1.0), bool(gp.noise_variance_ < 0.03)
    ('glf', True, True)
    >>> mean, std = gp.predict(X[:3], return_std=True)
    >>> bool(np.all(np.abs(mean - np.sin(X[:3, 0])) < 3 * std))
    True
    """

    _model_kinds = ("gpr",)

    def __init__(
        self,
        kernel="gaussian",
        features="auto",
        ard=False,
        lengthscale_bounds=None,
        noise_bounds=(1e-6, 10.0),
        signal_bounds=(1e-3, 1e3),
        n_features=1024,
        tol=1e-3,
        standardize=True,
        learn=True,
        lengthscale=None,
        random_state=0,
    ):
        self.kernel = kernel
        self.features = features
        self.ard = ard
        self.lengthscale_bounds = lengthscale_bounds
        self.noise_bounds = noise_bounds
        self.signal_bounds = signal_bounds
        self.n_features = n_features
        self.tol = tol
        self.standardize = standardize
        self.learn = learn
        self.lengthscale = lengthscale
        self.random_state = random_state

    def _settings(self, d: int, seed: int):
        from rfcli.jobs.train_gpr import GPRSettings

        if self.features not in ("auto", "glf", "rff"):
            raise UsageError(f"features must be 'auto', 'glf' or 'rff', got {self.features!r}")
        kind = self.features
        if kind == "auto":
            kind = "glf" if d <= GLF_MAX_DIM else "rff"
        return GPRSettings(
            features=kind,
            kernel=self.kernel,
            learn=self.learn,
            ard=self.ard,
            lengthscale_bounds=self.lengthscale_bounds,
            noise_bounds=tuple(self.noise_bounds),
            signal_bounds=tuple(self.signal_bounds),
            lengthscale=self.lengthscale,
            n_features=self.n_features,
            tol=self.tol,
            standardize=self.standardize,
            seed=seed,
        )

    def fit(self, X, y):
        """Learn the hyperparameters and the weight posterior on (X, y)."""
        from rfcli.io.readers import ReadSettings

        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        self._seed = seed_of(self.random_state)
        s = self._settings(X.shape[1], self._seed)
        source = ArraySource(X, names=columns_of(self), extra={LABEL: y}, path=ARRAY_PATH)
        read = ReadSettings(label=LABEL)
        try:
            model, enc, report = fit_gpr(source, s, read)
        except UsageError as e:
            if self.features != "auto" or not _rule_too_large(e):
                raise
            # GLF's rule for these lengthscales exceeds its node budget (the node count
            # grows as the product over the inputs): random Fourier features instead
            warnings.warn(f"{e}; using random Fourier features (features='rff')",
                          UserWarning, stacklevel=2)  # fmt: skip
            model, enc, report = fit_gpr(source, replace(s, features="rff"), read)
            report["glf_refused"] = str(e)
        self.encoder_, self.model_, self.report_ = enc, model, as_json(report)
        self.label_name_ = name
        self._set_learned(report)
        return self

    def _set_learned(self, report: dict) -> None:
        self.features_ = "glf" if self.encoder_.fmap.kind == "glf" else "rff"
        self.lengthscale_ = np.asarray(report.get("lengthscale", []), dtype=np.float64)
        self.signal_variance_ = float(report["signal_variance"])
        self.noise_variance_ = float(report["noise_variance"])
        self.log_marginal_likelihood_ = float(report["log_marginal_likelihood"])

    def predict(self, X, return_std: bool = False):
        """Predictive mean (and standard deviation, noise included, with ``return_std``),
        as ``rfcli predict`` writes them."""
        check_is_fitted(self)
        X = self._check_X(X)
        gp = self.model_
        width = 2 if return_std else 1

        def cols(F):  # rfcli predict's columns: the model's float64 scores, its std
            mean = gp.predict(F)
            return np.column_stack([mean, gp.std(F)]) if return_std else mean[:, None]

        out = self._stack(X, cols, width)
        return (out[:, 0], out[:, 1]) if return_std else out[:, 0]

    @classmethod
    def _params_from(cls, model, encoder) -> dict[str, Any]:
        info = model.info
        return {
            "kernel": info.get("kernel", "gaussian"),
            "features": info.get("features_kind", "auto"),
            "standardize": bool(encoder.preprocess.standardize),
            "random_state": encoder.fmap.seed,
        }

    def _restore(self, model, meta) -> None:
        self._set_learned(model.info)
