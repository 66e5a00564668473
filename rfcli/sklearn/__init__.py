"""scikit-learn estimators on in-memory data (``pip install 'rfcli[sklearn]'``).

* :class:`RandomFeatures` -- a transformer: compressed random features of the rows,
  ``transform`` gives float32 features whose inner products estimate the kernel,
  ``encode`` / ``decode`` the packed b-bit codes;
* :class:`RandomFeatureSVC` -- a linear SVM on them (``rfcli train --model svm``);
* :class:`RandomFeatureRidge` -- kernel ridge regression (``--model krr``), multi-output;
* :class:`GLFRegressor` -- GP regression with learned hyperparameters (``--model gpr``):
  Gauss-Legendre features for d <= 3 inputs, random Fourier features beyond.

They take NumPy arrays, pandas DataFrames and pyarrow Tables, follow scikit-learn's
conventions (pipelines, grid searches, ``clone``, pickling) and pass its estimator checks.
Large arrays are processed in chunks of 8192 rows (encoded, used, dropped): memory is the
input plus O(n_features^2).  The numbers are the CLI's: the estimators are thin wrappers
over the jobs on in-memory data (:func:`rfcli.fit_encoder`, :func:`rfcli.train` with
``encode=``, :func:`rfcli.train_gpr`), so a model fitted here equals one trained by the
CLI on a file with the same rows.
``save(path)`` writes an rfcli model file (JSON + arrays, no pickle) that ``rfcli
predict`` and ``rfcli evaluate`` use; :func:`load` reads one written by either.  A
walkthrough: docs/python.md.

``import rfcli`` never imports scikit-learn; ``import rfcli.sklearn`` does.

>>> import numpy as np
>>> from sklearn.datasets import make_classification
>>> from sklearn.model_selection import GridSearchCV
>>> from sklearn.pipeline import make_pipeline
>>> from sklearn.preprocessing import StandardScaler
>>> from rfcli.sklearn import RandomFeatureSVC, load
>>> X, y = make_classification(600, n_features=8, n_informative=6, random_state=0)
>>> pipe = make_pipeline(StandardScaler(), RandomFeatureSVC(n_features=256, C=1.0))
>>> search = GridSearchCV(pipe, {"randomfeaturesvc__gamma": [0.1, 0.3]}, cv=3)
>>> search = search.fit(X[:400], y[:400])
>>> sorted(search.best_params_)
['randomfeaturesvc__gamma']
>>> bool(search.score(X[400:], y[400:]) > 0.8)
True
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "svm.npz")
>>> clf = RandomFeatureSVC(n_features=256, gamma=0.1, C=1.0).fit(X, y)
>>> _ = clf.save(path)           # an rfcli model file: `rfcli predict svm.npz rows.parquet`
>>> bool(np.array_equal(load(path).predict(X), clf.predict(X)))
True
"""

from __future__ import annotations

import sys

try:  # validate_data and the estimator tags are new in scikit-learn 1.6
    from sklearn.utils.validation import validate_data  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised with scikit-learn hidden
    _MSG = "rfcli.sklearn needs scikit-learn >= 1.6: pip install 'rfcli[sklearn]'"
    if "pytest" in sys.modules:  # collected by pytest --doctest-modules: skip, not an error
        import pytest

        pytest.skip(_MSG, allow_module_level=True)
    raise ImportError(_MSG) from e

from rfcli.sklearn._features import RandomFeatures  # noqa: E402
from rfcli.sklearn._gpr import GLFRegressor  # noqa: E402
from rfcli.sklearn._linear import RandomFeatureRidge, RandomFeatureSVC  # noqa: E402

#: the estimator that loads each kind of rfcli model file
ESTIMATORS = {"svm": RandomFeatureSVC, "krr": RandomFeatureRidge, "gpr": GLFRegressor}


def load(path: str):
    """The fitted estimator of an rfcli model file (from ``save`` or ``rfcli train``).

    Parameters
    ----------
    path : str
        The model file.

    Returns
    -------
    RandomFeatureSVC, RandomFeatureRidge or GLFRegressor
        A :class:`RandomFeatureSVC` for an svm model, :class:`RandomFeatureRidge` for a
        regression krr model, :class:`GLFRegressor` for a gpr model (:data:`ESTIMATORS`).

    Raises
    ------
    ConfigError
        A malformed model file, or a classification krr model (no estimator holds it).
    """
    from rfcli.errors import ConfigError
    from rfcli.learn.model_file import load_model

    model, encoder, meta = load_model(path)
    cls = ESTIMATORS.get(model.kind)
    if cls is None:  # pragma: no cover - every model kind is listed
        raise ConfigError(f"{path}: no estimator for {model.kind} models")
    return cls._from_model(model, encoder, meta, path)


__all__ = [
    "ESTIMATORS",
    "GLFRegressor",
    "RandomFeatureRidge",
    "RandomFeatureSVC",
    "RandomFeatures",
    "load",
]
