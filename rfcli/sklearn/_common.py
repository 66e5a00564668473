"""What the estimators share: parameters -> rfcli settings, input validation, the rows
as an in-memory source, features of in-memory rows, and model files.

Every number comes from the public jobs the CLI runs, given the rows as an
:class:`~rfcli.io.arrays.ArraySource`: the encoder from :func:`rfcli.jobs.encode.fit_encoder`
(``rfcli encode``'s fitting passes), the models from :func:`rfcli.jobs.train.train` and
:func:`rfcli.jobs.train_gpr.train_gpr` on that source (encoded on the fly, with the chunks
of the store ``rfcli encode`` would write), the features for ``predict`` / ``transform``
from :class:`rfcli.learn.data.RawData`, as ``rfcli predict`` reads raw input; so a model
fitted here equals ``rfcli encode`` + ``rfcli train`` on the same data.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from rfcli.encoder import Encoder, jsonable
from rfcli.errors import ConfigError, check_int
from rfcli.io.arrays import ARRAY_PATH, ArraySource
from rfcli.io.readers import ReadSettings
from rfcli.jobs.encode import EncodeSettings
from rfcli.learn.data import Batch, RawData

#: the in-memory source's label column (never shown: X's columns keep their names)
LABEL = "__rfcli_label__"
#: input dtypes kept as they are (others become float64); chunks are float64 either way
DTYPES = [np.float64, np.float32]


def seed_of(random_state) -> int:
    """rfcli's integer seed from ``random_state``: an int is the seed itself (so
    ``random_state=0`` is the CLI's ``--seed 0``); None or a RandomState draw one."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return check_int(random_state, "random_state", 0)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def columns_of(est) -> list[str]:
    """The encoder's column names: the DataFrame's (``feature_names_in_``), else x0..x{d-1}."""
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        return [str(c) for c in names]
    return [f"x{j}" for j in range(est.n_features_in_)]


def label_name(y) -> str | None:
    """The name of a pandas Series label (recorded in model files for ``rfcli evaluate``)."""
    name = getattr(y, "name", None)
    return name if isinstance(name, str) and name else None


def keep_params(est, params: dict[str, Any]) -> None:
    """Set the constructor's arguments (``locals()`` of ``__init__``) as the attributes of
    the same names, and nothing else (scikit-learn's convention for ``__init__``)."""
    for name in est._get_param_names():
        setattr(est, name, params[name])


def _tuples(v):
    """JSON lists back to the tuples the parameters were given as (bounds)."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: _tuples(x) for k, x in v.items()}
    return v


def _options(params):
    if params is None:
        return {}
    return dict(params) if isinstance(params, dict) else params


class RFEstimator(BaseEstimator):
    """Base of the estimators: validation, encoding in chunks, model files."""

    #: the model kinds (rfcli model files) this estimator loads
    _model_kinds: tuple[str, ...] = ()

    # -- settings ---------------------------------------------------------------------------
    def _encode_settings(self, seed: int) -> EncodeSettings:
        return EncodeSettings(
            kernel=self.kernel,
            n_features=self.n_features,
            bits=self.bits,
            row_bytes=self.row_bytes,
            quantizer=self.quantizer,
            gamma=self.gamma,
            seed=seed,
            normalize_rows=self.normalize_rows,
            standardize=self.standardize,
            # a dict is copied; anything else is left to EncodeSettings.validate to refuse
            map_options=_options(self.kernel_params),
        )

    def _new_seed(self) -> int:
        """The seed of this fit (:func:`seed_of` ``random_state``), kept for model files."""
        self._seed = seed_of(self.random_state)
        return self._seed

    def _source(
        self, X, y=None, label: str = LABEL, names=None
    ) -> tuple[ArraySource, ReadSettings]:
        """The validated rows (and y, as the label column ``label``) as rfcli input, and
        how the jobs read it; ``names``: the columns (default: :func:`columns_of`)."""
        names = columns_of(self) if names is None else names
        source = ArraySource(X, names=names, extra=None if y is None else {label: y})
        return source, ReadSettings(label=None if y is None else label)

    def _fitted(self, result) -> None:
        """The fitted attributes of a train job's result."""
        self.encoder_, self.model_ = result.encoder, result.model
        self.report_ = as_json(result.report)
        if "gamma" in self._get_param_names():
            self.gamma_ = fitted_gamma(result.encoder)

    # -- using the encoder ------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=DTYPES)

    def _batches(self, X, normalized: bool = False) -> Iterator[Batch]:
        """The decoded features of X's rows, chunk by chunk, as ``rfcli predict`` reads a
        file of these rows."""
        source = ArraySource(X, names=list(self.encoder_.columns))
        data = RawData.open(source, self.encoder_, normalized, None)
        return data.batches(with_ids=False)

    def _stack(self, X, fn, width: int, dtype=np.float64, normalized=False) -> np.ndarray:
        """``fn(F)`` of every chunk of rows (features as ``rfcli predict`` computes them:
        8192-row chunks, encoded and decoded), stacked into (n, width)."""
        out = np.empty((len(X), width), dtype=dtype)
        for b in self._batches(X, normalized):
            out[b.row0 : b.row0 + len(b)] = fn(b.F)
        return out

    # -- model files ------------------------------------------------------------------------
    def _sklearn_meta(self) -> dict[str, Any]:
        params = self.get_params(deep=False)
        params["random_state"] = getattr(self, "_seed", params.get("random_state"))
        return {
            "estimator": type(self).__name__,
            "params": jsonable(params),
            "feature_names_in": hasattr(self, "feature_names_in_"),
        }

    def _check_savable(self) -> None:
        pass

    def save(self, path: str, *, overwrite: bool = False, label: str | None = None) -> str:
        """Write the fitted model to an rfcli model file (``.npz``: JSON metadata and arrays,
        no pickle), usable by ``rfcli predict`` / ``rfcli evaluate`` and by :meth:`load`.

        Parameters
        ----------
        path : str
            The model file to write.
        overwrite : bool, default=False
            Replace an existing file.
        label : str or None, default=None
            The label column ``rfcli evaluate`` reads from test data (default: the name
            of the pandas Series given as y, if any).

        Returns
        -------
        str
            ``path``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        OutputError
            ``path`` exists (without ``overwrite``).
        UsageError
            A model no model file holds (a multi-output ridge).
        """
        from rfcli.learn.model_file import save_model

        check_is_fitted(self)
        self._check_savable()
        label = label or getattr(self, "label_name_", None)
        extra = {
            "trained_on": {"input": ARRAY_PATH, "label": label},
            "sklearn": self._sklearn_meta(),
        }
        save_model(path, self.model_, self.encoder_, extra, overwrite=overwrite)
        return path

    @classmethod
    def load(cls, path: str):
        """A fitted estimator from an rfcli model file (written by :meth:`save` or by
        ``rfcli train``): predictions equal ``rfcli predict``'s with that file.

        Parameters
        ----------
        path : str
            The model file.

        Returns
        -------
        estimator
            A fitted instance of this class.

        Raises
        ------
        ConfigError
            A model of another kind (:func:`rfcli.sklearn.load` chooses the estimator), or
            a malformed file.
        """
        from rfcli.learn.model_file import load_model

        model, encoder, meta = load_model(path)
        if model.kind not in cls._model_kinds:
            raise ConfigError(
                f"{path}: a {model.kind} model, not one of {cls.__name__} "
                f"({', '.join(cls._model_kinds)}); rfcli.sklearn.load chooses the estimator"
            )
        return cls._from_model(model, encoder, meta, path)

    @classmethod
    def _from_model(cls, model, encoder: Encoder, meta: dict, path: str):
        sk = meta.get("sklearn") or {}
        if sk.get("estimator") == cls.__name__:
            params = {k: _tuples(v) for k, v in sk.get("params", {}).items()}
            names = bool(sk.get("feature_names_in"))
        else:  # trained by the CLI: the settings the encoder and the report record
            params = cls._params_from(model, encoder)
            names = True  # the input file's column names
        est = cls(**{k: v for k, v in params.items() if k in cls._get_param_names()})
        est._seed = encoder.fmap.seed
        est.encoder_ = encoder
        est.model_ = model
        est.n_features_in_ = len(encoder.columns)
        if names:
            est.feature_names_in_ = np.asarray(encoder.columns, dtype=object)
        if "gamma" in cls._get_param_names():
            est.gamma_ = fitted_gamma(encoder)
        est.label_name_ = (meta.get("trained_on") or {}).get("label")
        est.report_ = as_json(model.info)
        est._restore(model, meta)
        return est

    @classmethod
    def _params_from(cls, model, encoder: Encoder) -> dict[str, Any]:
        """Constructor parameters of a CLI-trained model, from its encoder and report."""
        d = encoder.describe()
        return {
            "kernel": d["kernel"],
            "n_features": d["features"],
            "bits": encoder.quantizer.bits,
            "quantizer": d["quantizer"],
            "gamma": fitted_gamma(encoder) or "auto",
            "standardize": d["preprocess"]["standardize"],
            "normalize_rows": d["preprocess"]["normalize_rows"],
            "random_state": encoder.fmap.seed,
            "normalized": model.normalized,
        }

    def _restore(self, model, meta: dict) -> None:
        """Fitted attributes beyond the encoder's (subclasses)."""


def as_json(report: dict) -> dict:
    """A training report as its model file holds it (JSON: keys are text)."""
    import json

    return json.loads(json.dumps(jsonable(report)))


def fitted_gamma(encoder: Encoder) -> float | None:
    g = getattr(encoder.fmap, "gamma_", None)
    return None if g is None else float(g)
