"""``GLFRegressor``: GP regression with learned hyperparameters (``rfcli train --model gpr``)
on in-memory rows."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from rfcli.constraints import Options, check_field
from rfcli.maps.glf_rules import MAX_DIM as GLF_MAX_DIM
from rfcli.sklearn._common import DTYPES, RFEstimator, keep_params, label_name


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
        over the dimensions); ``features_`` says which and ``report_["features_choice"]``
        why.  As ``rfcli train --model gpr``: a GLF rule that does not fit ``memory`` is
        refused (with the memory it needs), never replaced by other features.
    ard : bool, default=False
        One lengthscale per input (GLF only).
    lengthscale_bounds : (lo, hi), one (lo, hi) per input, or None, default=None
        In units of the (standardized) inputs; None: from the data's row sample.
    noise_bounds, signal_bounds : (lo, hi)
        Noise and signal variances, in units of the standardized target.
    n_features : int, default=1024
        Random Fourier features (features="rff").
    tol : float, default=1e-3
        GLF's kernel approximation tolerance (units of the signal variance) at the optimum;
        learning also keeps it at most 0.1 x the learned noise/signal ratio (refining the
        rule when needed).
    memory : int or None, default=None
        Memory budget in bytes for the GP's m x m arrays (None: the machine's physical
        memory); it bounds the GLF rule's nodes.
    standardize : bool, default=True
        Z-score the inputs.
    learn : bool, default=True
        Learn the hyperparameters (else: unit signal, 0.1 noise, ``lengthscale``).
    lengthscale : float or None, default=None
        The fixed lengthscale when ``learn=False`` (default: the bounds' geometric mean).
    exact : bool, default=True
        Fit the exact GP of the rows (its n x n kernel matrix; a band for one input) where
        that costs less than a GLF rule (small data, short lengthscales) and the rows fit
        ``memory`` (docs/gpr.md, Exact GP): ``features_`` is then "exact".
    random_state : int, RandomState or None, default=0

    Attributes
    ----------
    features_ : str
        "glf", "rff" or "exact" (the kernel against the training rows): the features used.
    lengthscale_ : ndarray
        Learned lengthscale(s), in standardized input units (one per input with ard).
    signal_variance_, noise_variance_ : float
        In y units.
    log_marginal_likelihood_ : float
        Of the training targets (y units) at the learned hyperparameters.
    encoder_, model_ : the rfcli Encoder and GPRModel.
    report_ : dict
        The training report (levels, scans, starts), as in the model file.
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> from rfcli.sklearn import GLFRegressor
    >>> X, noise = np.random.default_rng(0).uniform(0, 10, size=(300, 2)).T
    >>> X, y = X[:, None], np.sin(X) + 0.01 * (noise - 5)  # noise of std 0.029
    >>> gp = GLFRegressor(lengthscale_bounds=(0.05, 2.0)).fit(X, y)
    >>> # 300 rows: the exact GP of the rows costs less than a quadrature rule (docs/gpr.md)
    >>> gp.features_, bool(0.1 < gp.lengthscale_[0] < 1.0), bool(gp.noise_variance_ < 0.03)
    ('exact', True, True)
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
        memory=None,
        standardize=True,
        learn=True,
        lengthscale=None,
        exact=True,
        random_state=0,
    ):
        keep_params(self, locals())

    def _settings(self, d: int, seed: int):
        from rfcli.jobs.train_gpr import GPRSettings

        check_field("features", self.features, [Options("auto", "glf", "rff")])
        kind = self.features
        if kind == "auto":
            kind = "glf" if d <= GLF_MAX_DIM else "rff"
        return GPRSettings(
            features=kind,
            kernel=self.kernel,
            learn=self.learn,
            ard=self.ard,
            lengthscale_bounds=self.lengthscale_bounds,
            noise_bounds=self.noise_bounds,
            signal_bounds=self.signal_bounds,
            lengthscale=self.lengthscale,
            n_features=self.n_features,
            tol=self.tol,
            standardize=self.standardize,
            exact=self.exact,
            seed=seed,
        ).validate()

    def fit(self, X, y):
        """Learn the hyperparameters and the weight posterior on (X, y): ``rfcli.train_gpr``
        on these rows (:func:`rfcli.jobs.train_gpr.train_gpr`).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric inputs (float32 or float64).
        y : array-like of shape (n_samples,)
            Numeric targets.

        Returns
        -------
        self : GLFRegressor
            Fitted (``features_``, ``lengthscale_``, ``noise_variance_``, ``report_``, ...).

        Raises
        ------
        rfcli.errors.UsageError
            A GLF rule that does not fit ``memory`` (the message names the memory needed).
        """
        from rfcli.jobs.train_gpr import train_gpr

        self._settings(1, 0)  # the parameters, before any work (d and the seed come later)
        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, y_numeric=True, ensure_min_samples=2)
        source, read = self._source(X, np.asarray(y, dtype=np.float64))
        s = self._settings(X.shape[1], self._new_seed())
        result = train_gpr(source, None, s, read, memory=self.memory)
        if self.features == "auto":
            result.report["features_choice"] = (
                f"auto: {s.features} for {X.shape[1]} input(s) (GLF for at most "
                f"{GLF_MAX_DIM}, random Fourier features beyond)"
            )
        self._fitted(result)
        self.label_name_ = name
        self._set_learned(result.report)
        return self

    def _set_learned(self, report: dict) -> None:
        kind = self.encoder_.fmap.kind
        self.features_ = kind if kind in ("glf", "exact") else "rff"
        self.lengthscale_ = np.asarray(report.get("lengthscale", []), dtype=np.float64)
        self.signal_variance_ = float(report["signal_variance"])
        self.noise_variance_ = float(report["noise_variance"])
        self.log_marginal_likelihood_ = float(report["log_marginal_likelihood"])

    def predict(self, X, return_std: bool = False):
        """Predictive mean (and standard deviation, noise included, with ``return_std``),
        as ``rfcli predict`` writes them.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Inputs with the training columns.
        return_std : bool, default=False
            Also return the predictive standard deviation.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std``.
        """
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
