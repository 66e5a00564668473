"""``RandomFeatureSVC`` and ``RandomFeatureRidge``: the linear learners of ``rfcli train``
on the features of in-memory rows, chunk by chunk."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from rfcli.errors import UsageError
from rfcli.learn.targets import Targets
from rfcli.progress import NullProgress
from rfcli.sklearn._common import (
    DTYPES,
    ArrayData,
    RFEstimator,
    as_json,
    label_name,
    seed_of,
    train_chunk_rows,
)


def _check_memory(model: str, m: int, k: int, folds: int, chunk_rows: int, svm: bool) -> None:
    """Refuse a model whose m x m statistics cannot fit in memory, as ``rfcli train``
    does (same estimate)."""
    from rfcli.learn.ridge import RidgeStats
    from rfcli.memory import check_fits, learner_need, physical_memory

    need = learner_need(model, m, k, folds) + 3 * 4 * chunk_rows * m
    need += max(folds if not svm else 1, 1) * RidgeStats.SUB_ROWS32 * (m + k) * 4
    check_fits(f"{model.upper()} with m = {m} features", need, physical_memory(),
               "use fewer n_features")  # fmt: skip


class _LinearBase(RFEstimator):
    def _train(self, X, y_batches, targets: Targets, model: str, labels=None):
        """Fit the encoder on X, then train ``model`` (svm or krr) on its features with
        the train job's own numerics; returns (model, report)."""
        from rfcli.engines import open_engine
        from rfcli.jobs.train import TrainSettings, _check, _n_folds, _train_ridge, _train_svm
        from rfcli.learn.data import default_cache_bytes

        svm = model == "svm"
        seed = seed_of(self.random_state)
        settings = TrainSettings(
            model=model,
            normalized=self.normalized,
            C=self.C if svm else "auto",
            alpha="auto" if svm else self.alpha,
            loss=self.loss if svm else "squared_hinge",
            task="classification" if svm else "regression",
            cv_folds=self.cv_folds,
            seed=seed,
            max_iter=self.max_iter if svm else 1000,
            tol=self.tol if svm else 1e-7,
        )
        _check(settings)  # before the encoder's passes: bad C/alpha/loss fail at once
        enc = self._fit_encoder(X, labels, seed)
        m = enc.n_features
        rows = train_chunk_rows(enc)
        k = targets.n_outputs if not svm else (1 if targets.n_outputs == 2 else targets.n_outputs)
        _check_memory(model, m, k, _n_folds(settings), rows, svm)
        cache = default_cache_bytes() if svm else 0
        data = ArrayData(X, y_batches, enc, normalized=self.normalized, chunk_rows=rows,
                         cache_bytes=cache)  # fmt: skip
        fit = _train_svm if svm else _train_ridge
        with open_engine("local", progress=NullProgress()) as eng:
            lm, report = fit(eng.passes(data, cache=svm), targets, settings, NullProgress())
        if svm:
            report["cache"] = {"kind": data.cache_kind, "bytes": data.cache_size,
                               "where": "this process"}  # fmt: skip
        report.update({"rows": data.n_rows, "features": m, "bits": enc.quantizer.bits_per_feature})
        lm.info = report
        self.model_ = lm
        self.report_ = as_json(report)
        return lm, report

    def _scores(self, X) -> np.ndarray:
        """The model's scores, (n, outputs): per class (a binary SVM's as [-s, s])."""
        X = self._check_X(X)
        lm = self.model_
        k = lm.W.shape[1]
        width = 2 if lm.kind == "svm" and k == 1 else k
        # float64 products: a row's score does not depend on the other rows given
        # (scikit-learn's subset-invariance check, on every BLAS kernel)
        return self._stack(X, partial(lm.scores, precise=True), width, normalized=lm.normalized)


class RandomFeatureSVC(ClassifierMixin, _LinearBase):
    """A linear SVM on compressed random features: kernel-SVM accuracy at the cost of a
    linear model (Rahimi & Recht, "Random Features for Large-Scale Kernel Machines",
    NeurIPS 2007; quantized features: Li & Li, "Quantization Algorithms for Random Fourier
    Features", ICML 2021).

    ``fit`` encodes the rows in chunks (as ``rfcli encode``) and trains ``rfcli train
    --model svm``'s L2-regularized SVM (squared hinge or hinge, one-vs-rest, L-BFGS-B
    preconditioned with the features' Gram matrix) on their decoded features; ``C="auto"``
    picks C by k-fold cross-validation over 0.01 .. 100 (extended at the edges).  The
    rows are kept between passes as decoded features or packed codes when they fit
    (at most min(2 GiB, memory/4)), else encoded again in every pass.

    Parameters
    ----------
    kernel, n_features, bits, quantizer, gamma, standardize, normalize_rows,
    kernel_params, random_state :
        The encoder, as in :class:`RandomFeatures` (``gamma="search"`` uses y).
    C : float or "auto", default="auto"
        Penalty; "auto": chosen by ``cv_folds``-fold cross-validation.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
    normalized : bool, default=False
        Train on unit feature rows (Li & Li's normalized estimator).
    cv_folds : int, default=5
        Folds of the C selection (rows dealt to folds by a hash of their index).
    max_iter : int, default=1000
    tol : float, default=1e-7
        Relative objective reduction at which L-BFGS-B stops.

    Attributes
    ----------
    classes_ : ndarray
    C_ : float
        The C used (chosen or given).
    gamma_ : float or None
        The bandwidth used.
    n_iter_ : int
        L-BFGS-B iterations of the final fit.
    report_ : dict
        The training report (cross-validation scores, passes, objective), as in the model
        file.
    encoder_, model_ : the rfcli Encoder and LinearSVM.
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from rfcli.sklearn import RandomFeatureSVC
    >>> X, y = make_moons(400, noise=0.1, random_state=0)
    >>> clf = RandomFeatureSVC(n_features=256, gamma=2.0, C=10.0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.97), clf.classes_.tolist()
    (True, [0, 1])
    """

    _model_kinds = ("svm",)

    def __init__(
        self,
        kernel="gaussian",
        n_features=1024,
        bits=None,
        quantizer=None,
        gamma="auto",
        standardize=False,
        normalize_rows=False,
        kernel_params=None,
        C="auto",
        loss="squared_hinge",
        normalized=False,
        cv_folds=5,
        max_iter=1000,
        tol=1e-7,
        random_state=0,
    ):
        self.kernel = kernel
        self.n_features = n_features
        self.bits = bits
        self.quantizer = quantizer
        self.gamma = gamma
        self.standardize = standardize
        self.normalize_rows = normalize_rows
        self.kernel_params = kernel_params
        self.C = C
        self.loss = loss
        self.normalized = normalized
        self.cv_folds = cv_folds
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y):
        """Encode X and train the SVM on its features."""
        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, ensure_min_samples=2)
        check_classification_targets(y)
        y = column_or_1d(y, warn=True)
        classes, idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                f"RandomFeatureSVC needs at least 2 classes; the data has one class: {classes[0]!r}"
            )
        self.classes_ = classes
        self.label_name_ = name
        targets = Targets("classification", classes.tolist())
        values = np.asarray(targets.classes, dtype=object)[idx]
        labels = idx if self.gamma == "search" else None
        _, report = self._train(X, values, targets, "svm", labels)
        self.C_ = float(report["C"])
        self.n_iter_ = int(report["iterations"])
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores ``F(x)'w_k + b_k``: (n,) for two classes (positive: ``classes_[1]``), else
        (n, n_classes)."""
        check_is_fitted(self)
        S = self._scores(X)
        return S[:, 1] if len(self.classes_) == 2 else S

    def predict(self, X) -> np.ndarray:
        """The class of the largest score (what ``rfcli predict`` writes)."""
        check_is_fitted(self)
        S = self._scores(X)
        return self.classes_[np.argmax(S, axis=1)]

    @classmethod
    def _params_from(cls, model, encoder) -> dict[str, Any]:
        p = super()._params_from(model, encoder)
        info = model.info
        p.update(C=info.get("C", "auto"), loss=info.get("loss", "squared_hinge"))
        return p

    def _restore(self, model, meta) -> None:
        self.classes_ = np.asarray(model.targets.classes)
        self.C_ = float(model.info.get("C", np.nan))
        self.n_iter_ = int(model.info.get("iterations", 0))


class _Outputs(Targets):
    """Regression targets with ``k`` outputs (columns of y), for the ridge statistics."""

    def __init__(self, k: int):
        super().__init__("regression")
        self.k = k

    @property
    def n_outputs(self) -> int:
        return self.k

    def encode(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=np.float64).reshape(len(y), self.k)

    def decode(self, scores: np.ndarray) -> np.ndarray:
        return scores if self.k > 1 else scores[:, 0]


class RandomFeatureRidge(RegressorMixin, _LinearBase):
    """Kernel ridge regression on compressed random features, exact from streamed
    statistics (``rfcli train --model krr``): one pass over X's chunks accumulates
    ``Phi'Phi``, ``Phi'Y`` and the sums in float64, the weights solve
    ``(Phi_c'Phi_c + alpha I) W = Phi_c'Y_c`` (intercept not penalized).  Memory: the input
    plus O(n_features^2), never n x n_features.  Multi-output y is supported.

    Parameters
    ----------
    kernel, n_features, bits, quantizer, gamma, standardize, normalize_rows,
    kernel_params, random_state :
        The encoder, as in :class:`RandomFeatures` (``gamma="search"``: one output only).
    alpha : float or "auto", default="auto"
        Penalty; "auto": chosen by ``cv_folds``-fold cross-validation over
        ``10^-7 .. 10^1 * trace(Phi_c'Phi_c)/m`` (extended at the edges), from the
        statistics of the same single pass.
    normalized : bool, default=False
        Unit feature rows (Li & Li's normalized estimator).
    cv_folds : int, default=5

    Attributes
    ----------
    alpha_ : float
    gamma_ : float or None
    report_ : dict
        The training report (cross-validation, train MSE), as in the model file.
    encoder_, model_ : the rfcli Encoder and RidgeModel.
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> from rfcli.sklearn import RandomFeatureRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)
    >>> reg = RandomFeatureRidge(n_features=256, bits=4).fit(X, y)
    >>> bool(reg.score(X, y) > 0.95)
    True
    """

    _model_kinds = ("krr",)

    def __init__(
        self,
        kernel="gaussian",
        n_features=1024,
        bits=None,
        quantizer=None,
        gamma="auto",
        standardize=False,
        normalize_rows=False,
        kernel_params=None,
        alpha="auto",
        normalized=False,
        cv_folds=5,
        random_state=0,
    ):
        self.kernel = kernel
        self.n_features = n_features
        self.bits = bits
        self.quantizer = quantizer
        self.gamma = gamma
        self.standardize = standardize
        self.normalize_rows = normalize_rows
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.normalized = normalized
        self.cv_folds = cv_folds
        self.random_state = random_state

    def fit(self, X, y):
        """Encode X and solve the ridge problem on its features (y: (n,) or (n, k))."""
        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, y_numeric=True, multi_output=True,
                             ensure_min_samples=2)  # fmt: skip
        y = np.asarray(y, dtype=np.float64)
        self._y_2d = y.ndim == 2
        Y = y.reshape(len(y), -1)
        labels = None
        if self.gamma == "search":
            if Y.shape[1] != 1:
                raise UsageError("gamma='search' needs one target (y of one column)")
            labels = Y[:, 0]
        self.label_name_ = name
        self.n_outputs_ = Y.shape[1]
        _, report = self._train(X, Y, _Outputs(Y.shape[1]), "krr", labels)
        self.alpha_ = float(report["alpha"])
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions (n,), or (n, k) for a y of k columns."""
        check_is_fitted(self)
        S = self._scores(X)
        return S if self._y_2d else S[:, 0]

    def _check_savable(self) -> None:
        if self.n_outputs_ > 1:
            raise UsageError(
                f"an rfcli model file holds one regression output; this model has "
                f"{self.n_outputs_} (fit one model per column of y to save them)"
            )

    def _sklearn_meta(self) -> dict[str, Any]:
        meta = super()._sklearn_meta()
        meta["y_2d"] = bool(self._y_2d)
        return meta

    @classmethod
    def _params_from(cls, model, encoder) -> dict[str, Any]:
        p = super()._params_from(model, encoder)
        p.update(alpha=model.info.get("alpha", "auto"))
        return p

    def _restore(self, model, meta) -> None:
        if model.targets.task != "regression":
            raise UsageError(
                "a classification KRR model (one-hot targets): RandomFeatureRidge is a "
                "regressor; use rfcli predict, or train a RandomFeatureSVC"
            )
        self._y_2d = bool((meta.get("sklearn") or {}).get("y_2d", False))
        self.n_outputs_ = 1
        self.alpha_ = float(model.info.get("alpha", np.nan))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
