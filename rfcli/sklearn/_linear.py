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
from rfcli.sklearn._common import DTYPES, RFEstimator, keep_params, label_name


class _LinearBase(RFEstimator):
    def _train_settings(self, model: str, seed: int):
        """``rfcli train``'s settings of this estimator (``model``: svm or krr), validated;
        the encoder's settings are validated too."""
        from rfcli.jobs.train import TrainSettings

        svm = model == "svm"
        self._encode_settings(seed).validate()
        return TrainSettings(
            model=model,
            normalized=self.normalized,
            C=self.C if svm else "auto",
            alpha="auto" if svm else self.alpha,
            loss=self.loss if svm else "squared_hinge",
            multiclass=self.multiclass if svm else "ovr",
            task="classification" if svm else "regression",
            cv_folds=self.cv_folds,
            seed=seed,
            max_iter=self.max_iter if svm else 1000,
            tol=self.tol if svm else 1e-7,
        ).validate()

    def _train(self, X, y, model: str) -> dict:
        """Train ``model`` (svm or krr) on X's rows and label y: ``rfcli.train`` on them
        with this estimator's encoder settings (fitted and encoded on the fly, as ``rfcli
        encode`` + ``rfcli train`` on a file of these rows); returns the report."""
        from rfcli.jobs.train import train

        seed = self._new_seed()
        settings = self._train_settings(model, seed)
        source, read = self._source(X, y)
        result = train(source, None, settings, read, encode=self._encode_settings(seed))
        self._fitted(result)
        return result.report

    def _scores(self, X) -> np.ndarray:
        """The model's scores, (n, outputs): per class (a binary SVM's as [-s, s])."""
        X = self._check_X(X)
        lm = self.model_
        # the SVM's scores are per class (one-vs-one: from the pairs' votes)
        width = len(lm.targets.classes) if lm.kind == "svm" else lm.W.shape[1]
        # float64 products: a row's score does not depend on the other rows given
        # (scikit-learn's subset-invariance check, on every BLAS kernel)
        return self._stack(X, partial(lm.scores, precise=True), width, normalized=lm.normalized)


class _needs_probability:
    """A method that exists only with ``probability=True`` (``hasattr`` is False without
    it, as scikit-learn's ``available_if``), whose AttributeError says why."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        if not obj.probability:
            raise AttributeError(
                f"{self.fn.__name__} needs probability=True: an SVM's scores are no "
                "probabilities, and RandomFeatureSVC(probability=True) fits Platt's sigmoids "
                "on held-out folds to make them (5 more fits); decision_function gives the "
                "scores"
            )
        return self.fn.__get__(obj, owner)


class RandomFeatureSVC(ClassifierMixin, _LinearBase):
    """A linear SVM on compressed random features: kernel-SVM accuracy at the cost of a
    linear model (Rahimi & Recht, "Random Features for Large-Scale Kernel Machines",
    NeurIPS 2007; quantized features: Li & Li, "Quantization Algorithms for Random Fourier
    Features", ICML 2021).

    ``fit`` encodes the rows in chunks (as ``rfcli encode``) and trains ``rfcli train
    --model svm``'s L2-regularized SVM (squared hinge or hinge, one-vs-rest or one-vs-one,
    L-BFGS-B preconditioned with the features' Gram matrix) on their decoded features; ``C="auto"``
    picks C by k-fold cross-validation over 0.01 .. 100 (extended at the edges).  The
    rows are kept between passes as decoded features or packed codes when they fit
    (at most min(2 GiB, memory/4)), else encoded again in every pass.  With fewer rows
    than ``n_features`` (and the squared hinge) it solves the same problem in the
    n-dimensional dual instead: finite Newton steps on the rows' kernel matrix, exact
    (docs/learning.md, Small data).

    Parameters
    ----------
    kernel, n_features, bits, quantizer, gamma, standardize, normalize_rows,
    kernel_params, random_state, row_bytes :
        The encoder, as in :class:`RandomFeatures` (``gamma="search"`` and
        ``bits="auto"`` use y).
    C : float or "auto", default="auto"
        Penalty; "auto": chosen by ``cv_folds``-fold cross-validation.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
    multiclass : {"auto", "ovr", "ovo"}, default="auto"
        More than two classes: one-vs-rest (one problem per class, the largest score wins)
        or one-vs-one (one problem per pair of classes on their rows, decided by votes; a
        tie goes to the tied class of the largest summed decision value, then to the first;
        docs/learning.md, Multi-class).  Cross-validation scores the voted predictions.
        "auto": one-vs-one with fewer rows than features (the squared hinge then trains in
        the dual, where one-vs-one is the cheaper), else one-vs-rest; ``model_.multiclass``
        holds the scheme trained.
    normalized : bool, default=False
        Train on unit feature rows (Li & Li's normalized estimator).
    cv_folds : int, default=5
        Folds of the C selection (rows dealt to folds by a hash of their index).
    max_iter : int, default=1000
    tol : float, default=1e-7
        Relative objective reduction at which L-BFGS-B stops.
    probability : bool, default=False
        Also fit :meth:`predict_proba`: after the model, the same model (its C and gamma)
        is fitted on 4 of 5 stratified folds and scores the fifth, five times, and a
        sigmoid per class is fitted on these held-out scores (Platt scaling,
        rfcli.sklearn._calibration), as scikit-learn's ``SVC(probability=True)``; five
        more fits.  The probabilities' arg-max can differ from :meth:`predict`'s on rows
        near the margin; model files do not hold the sigmoids.

    Attributes
    ----------
    classes_ : ndarray
    C_ : float
        The C used (chosen or given).
    sigmoids_ : ndarray of shape (k, 2)
        With ``probability=True``: Platt's (A, B) per class score of
        :meth:`decision_function` (k = 1 for two classes), ``P = 1 / (1 + exp(A s + B))``.
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

    def __init__(self, kernel="gaussian", n_features=None, bits=None, quantizer=None, gamma="auto",
                 standardize=False, normalize_rows=False, kernel_params=None, C="auto",
                 loss="squared_hinge", normalized=False, cv_folds=5, max_iter=1000, tol=1e-7,
                 random_state=0, row_bytes=None, probability=False, multiclass="auto"):  # fmt: skip
        keep_params(self, locals())

    def fit(self, X, y):
        """Encode X and train the SVM on its features (and with ``probability=True`` the
        sigmoids of :meth:`predict_proba`, on held-out folds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.
        y : array-like of shape (n_samples,)
            The classes (at least two).

        Returns
        -------
        self : RandomFeatureSVC
            The fitted classifier.

        Raises
        ------
        UsageError, TypeError
            A bad parameter.
        ValueError
            One class only, or (``probability=True``) a class of one row.
        """
        if not isinstance(self.probability, bool):
            raise TypeError(f"probability must be True or False, got {self.probability!r}")
        self._train_settings("svm", 0)  # the parameters, before any work
        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, ensure_min_samples=2)
        check_classification_targets(y)
        y = column_or_1d(y, warn=True)
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(
                f"RandomFeatureSVC needs at least 2 classes; the data has one class: {classes[0]!r}"
            )
        self.classes_ = classes
        self.label_name_ = name
        report = self._train(X, y, "svm")
        self.C_ = float(report["C"])
        self.n_iter_ = int(report["iterations"])
        if self.probability:
            self.sigmoids_ = self._held_out_sigmoids(X, y)
        return self

    #: folds of the held-out scores that :meth:`predict_proba`'s sigmoids are fitted on
    PROBABILITY_FOLDS = 5

    def _held_out_sigmoids(self, X, y) -> np.ndarray:
        """Platt's sigmoids fitted on held-out scores: this model's C and gamma (and
        encoder shape) refitted on the other stratified folds of the rows."""
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        from rfcli.sklearn._calibration import fit_sigmoid

        counts = np.unique(y, return_counts=True)[1]
        if counts.min() < 2:
            raise ValueError("probability=True fits its sigmoids on held-out folds: every "
                             f"class needs at least 2 rows, one has {counts.min()}")  # fmt: skip
        folds = StratifiedKFold(min(self.PROBABILITY_FOLDS, int(counts.min())), shuffle=True,
                                random_state=self._seed % 2**32)  # fmt: skip
        fixed = {"C": self.C_, "probability": False, "random_state": self._seed}
        if self.gamma_ is not None:
            fixed["gamma"] = self.gamma_
        if self.bits == "auto":  # the chosen bits and features, not a new choice per fold
            fixed.update(bits=self.encoder_.quantizer.bits, n_features=self.encoder_.n_features,
                         row_bytes=None)  # fmt: skip
        k = 1 if len(self.classes_) == 2 else len(self.classes_)
        held_out = np.zeros((len(y), k))
        for train, test in folds.split(X, y):
            part = clone(self).set_params(**fixed).fit(X[train], y[train])
            s = part.decision_function(X[test])
            held_out[test] = s.reshape(len(test), -1)
        if k == 1:
            return np.array([fit_sigmoid(held_out[:, 0], y == self.classes_[1])])
        return np.array([fit_sigmoid(held_out[:, j], y == c) for j, c in enumerate(self.classes_)])

    @_needs_probability
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: Platt's sigmoids of the class scores of
        :meth:`decision_function` (one-vs-rest scores, or one-vs-one's votes), fitted on
        held-out folds (``probability=True``), normalized to sum to one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The probabilities, columns in the order of ``classes_``.

        Raises
        ------
        AttributeError
            Without ``probability=True`` (the SVM's scores are no probabilities).
        """
        from rfcli.sklearn._calibration import sigmoid_probabilities

        check_is_fitted(self, "sigmoids_")
        S = self._scores(X)
        S = S[:, 1:] if len(self.classes_) == 2 else S
        return sigmoid_probabilities(S, self.sigmoids_)

    @_needs_probability
    def predict_log_proba(self, X) -> np.ndarray:
        """The logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The log-probabilities (``-inf`` where a probability is 0).
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def decision_function(self, X) -> np.ndarray:
        """The SVM's scores: ``F(x)'w_k + b_k`` per class (one-vs-rest), or one-vs-one's
        votes per class plus ``t / (3 (1 + |t|))`` of the class's summed decision value t
        (in (-1/3, 1/3): the arg-max is the vote with its tie rule, as scikit-learn's
        ``SVC(decision_function_shape="ovr")`` shapes its one-vs-one scores).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            One score per row for two classes (positive: ``classes_[1]``; both schemes),
            else one per class.
        """
        check_is_fitted(self)
        S = self._scores(X)
        return S[:, 1] if len(self.classes_) == 2 else S

    def predict(self, X) -> np.ndarray:
        """The class of the largest score (what ``rfcli predict`` writes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted classes (values of ``classes_``).
        """
        check_is_fitted(self)
        S = self._scores(X)
        return self.classes_[np.argmax(S, axis=1)]

    @classmethod
    def _params_from(cls, model, encoder) -> dict[str, Any]:
        p = super()._params_from(model, encoder)
        info = model.info
        p.update(
            C=info.get("C", "auto"),
            loss=info.get("loss", "squared_hinge"),
            multiclass=getattr(model, "multiclass", "ovr"),
        )
        return p

    def _restore(self, model, meta) -> None:
        self.classes_ = np.asarray(model.targets.classes)
        self.C_ = float(model.info.get("C", np.nan))
        self.n_iter_ = int(model.info.get("iterations", 0))


class RandomFeatureRidge(RegressorMixin, _LinearBase):
    """Kernel ridge regression on compressed random features, exact from streamed
    statistics (``rfcli train --model krr``): one pass over X's chunks accumulates
    ``Phi'Phi``, ``Phi'Y`` and the sums in float64, the weights solve
    ``(Phi_c'Phi_c + alpha I) W = Phi_c'Y_c`` (intercept not penalized).  Memory: the input
    plus O(n_features^2), never n x n_features.  With fewer rows n than ``n_features`` it
    solves the same problem in the n-dimensional dual (the rows' n x n kernel matrix,
    float64; the n x n_features features are then kept, less than the statistics).
    Multi-output y is supported.

    Parameters
    ----------
    kernel, n_features, bits, quantizer, gamma, standardize, normalize_rows,
    kernel_params, random_state, row_bytes :
        The encoder, as in :class:`RandomFeatures` (``gamma="search"``, ``bits="auto"``:
        one output only).
    alpha : float or "auto", default="auto"
        Penalty; "auto": chosen by ``cv_folds``-fold cross-validation over
        ``10^-7 .. 10^1 * trace(Phi_c'Phi_c)/m`` (extended at the edges; floored at the
        float32 rounding of the statistics, rfcli.learn.ridge.alpha_floor), from the
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

    def __init__(self, kernel="gaussian", n_features=None, bits=None, quantizer=None, gamma="auto",
                 standardize=False, normalize_rows=False, kernel_params=None, alpha="auto",
                 normalized=False, cv_folds=5, random_state=0, row_bytes=None):  # fmt: skip
        keep_params(self, locals())

    def fit(self, X, y):
        """Encode X and solve the ridge problem on its features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The targets; k columns fit k outputs that share the features and alpha.

        Returns
        -------
        self : RandomFeatureRidge
            The fitted regressor.

        Raises
        ------
        UsageError, TypeError
            A bad parameter.
        """
        self._train_settings("krr", 0)  # the parameters, before any work
        name = label_name(y)
        X, y = validate_data(self, X, y, dtype=DTYPES, y_numeric=True, multi_output=True,
                             ensure_min_samples=2)  # fmt: skip
        y = np.asarray(y, dtype=np.float64)
        self._y_2d = y.ndim == 2
        self.label_name_ = name
        self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]
        # one column is one output (a 1-D label); k columns, k outputs sharing alpha
        report = self._train(X, y[:, 0] if self.n_outputs_ == 1 and self._y_2d else y, "krr")
        self.alpha_ = float(report["alpha"])
        return self

    def predict(self, X) -> np.ndarray:
        """The ridge predictions (what ``rfcli predict`` writes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table), columns in the
            order of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
            One column per output for a y of several columns.
        """
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
