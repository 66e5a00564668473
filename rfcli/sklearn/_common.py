"""What the estimators share: parameters -> rfcli settings, input validation, fitting the
encoder on in-memory rows (the CLI's fitting passes over an :class:`ArraySource`), the
learners' passes over in-memory rows (:class:`ArrayData`), and model files.

Every number comes from the code the CLI runs: the encoder from
:meth:`rfcli.engines.local.LocalEngine.fit_encoder` (pass 1 over chunks with global row
indices: column statistics in fixed 4096-row blocks, the ``BottomK`` hash sample for the
median heuristic and the gamma search; then the map pass), the learners from
:mod:`rfcli.jobs.train` / :mod:`rfcli.jobs.train_gpr`, with the chunk sizes the CLI uses,
so a model fitted here equals ``rfcli encode`` + ``rfcli train`` on the same data.
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
from rfcli.encoder_fit import EncodeSettings
from rfcli.engines import open_engine
from rfcli.errors import ConfigError, UsageError, check_int
from rfcli.io.arrays import ARRAY_PATH, ArraySource
from rfcli.io.readers import ReadSettings, iter_chunks, select_columns
from rfcli.learn.data import Batch
from rfcli.progress import NullProgress

#: the in-memory source's label column (never shown: X's columns keep their names)
LABEL = "__rfcli_label__"
#: rows per chunk of raw rows (rfcli's ReadSettings default: the CLI's chunks)
CHUNK_ROWS = 8192
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


def fit_encoder(X: np.ndarray, columns: list[str], settings: EncodeSettings,
                labels: np.ndarray | None = None) -> Encoder:  # fmt: skip
    """The encoder ``settings`` describe, fitted on the rows of ``X`` exactly as
    ``rfcli encode`` fits it on a file with these rows (``labels``: the label column,
    for ``gamma='search'``)."""
    source = ArraySource(X, names=columns, extra=None if labels is None else {LABEL: labels})
    label = None if labels is None else LABEL
    sel = select_columns(source, columns, label)
    with open_engine("local", progress=NullProgress()) as eng:
        return eng.fit_encoder(source, sel, settings, ReadSettings(label=label))


def label_name(y) -> str | None:
    """The name of a pandas Series label (recorded in model files for ``rfcli evaluate``)."""
    name = getattr(y, "name", None)
    return name if isinstance(name, str) and name else None


class ArrayData:
    """The learners' passes over in-memory rows (what :class:`rfcli.learn.data.StoreData`
    and ``RawData`` are for a store and a file): chunks of ``chunk_rows`` rows, read from
    ``X`` through an :class:`ArraySource` (float64 C-ordered chunks, as from a file),
    encoded with global row indices and decoded; ``y[r0:r1]`` beside them.

    ``cache_bytes``: keep the rows between passes when they fit (the SVM's many passes),
    as ``StoreData`` does: the decoded float32 features if they fit, else the packed codes
    (decoded again in every pass), else nothing (every pass encodes its chunks again).
    ``raw_features``: the map's unquantized features (GP statistics)."""

    def __init__(self, X, y, encoder: Encoder, *, normalized: bool = False,
                 raw_features: bool = False, chunk_rows: int = CHUNK_ROWS,
                 cache_bytes: int = 0):  # fmt: skip
        self.source = ArraySource(X, names=list(encoder.columns))
        self.sel = select_columns(self.source, list(encoder.columns))
        self.y = y
        self.encoder = encoder
        self.normalized = normalized
        self.raw_features = raw_features
        self.chunk_rows = int(chunk_rows)
        self.n_rows = self.source.num_rows
        self.label_name = LABEL if y is not None else None
        m = encoder.n_features
        decoded, packed = self.n_rows * (4 * m + 8), self.n_rows * (encoder.row_bytes + 16)
        self.cache_kind = "none"
        if not raw_features and cache_bytes > 0:
            if 0 < decoded <= cache_bytes:
                self.cache_kind = "decoded"
            elif packed <= cache_bytes:
                self.cache_kind = "packed"
        self.cache_size = {"decoded": decoded, "packed": packed}.get(self.cache_kind, 0)
        self._cache: list | None = None

    def _fresh(self) -> Iterator[tuple[int, Any]]:
        """(row0, what the cache keeps of the chunk: decoded F, EncodedChunk or F)."""
        enc = self.encoder
        for ch in iter_chunks(self.source, self.sel, self.chunk_rows):
            if self.raw_features:
                yield ch.row0, enc.features(ch.X)
                continue
            e = enc.encode_chunk(ch.X, ch.row0)
            if self.cache_kind == "packed":
                yield ch.row0, e
            else:
                yield ch.row0, enc.decode(e.packed, e.norms, e.row_scale, self.normalized)

    def _features(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._cache is not None:
            items = self._cache
        else:
            items = self._fresh()
            if self.cache_kind != "none":
                items = list(items)  # bounded by cache_bytes
                if self.cache_kind == "decoded":
                    for _, F in items:
                        F.flags.writeable = False  # shared by every later pass
                self._cache = items
        for r0, item in items:
            if self.cache_kind == "packed":
                item = self.encoder.decode(item.packed, item.norms, item.row_scale,
                                           self.normalized)  # fmt: skip
            yield r0, item

    def batches(self, with_ids: bool = False) -> Iterator[Batch]:
        y = self.y
        for r0, F in self._features():
            yield Batch(r0, F, None if y is None else y[r0 : r0 + len(F)])


def train_chunk_rows(encoder: Encoder) -> int:
    """Rows per decoded chunk of the svm/krr passes: what ``rfcli train`` uses for a store
    written by ``rfcli encode`` with this encoder (decoded chunks of about 16 MiB, at most
    a store chunk), so the sums run in the same order and give the same numbers."""
    from rfcli.io.store.format import store_chunk_rows
    from rfcli.memory import physical_memory

    m = encoder.n_features
    budget = physical_memory()
    store_rows = store_chunk_rows(encoder.row_bytes)
    return max(256, min(8192, store_rows, (16 << 20) // (4 * m), budget // (48 * m)))


def _tuples(v):
    """JSON lists back to the tuples the parameters were given as (bounds)."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: _tuples(x) for k, x in v.items()}
    return v


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
            quantizer=self.quantizer,
            gamma=self.gamma,
            seed=seed,
            normalize_rows=self.normalize_rows,
            standardize=self.standardize,
            map_options=dict(self.kernel_params or {}),
        )

    def _fit_encoder(self, X, labels=None, seed: int | None = None) -> Encoder:
        self._seed = seed_of(self.random_state) if seed is None else seed
        if self.gamma == "search" and labels is None:
            raise UsageError("gamma='search' chooses the bandwidth by validation: give y to fit")
        enc = fit_encoder(X, columns_of(self), self._encode_settings(self._seed), labels)
        self.encoder_ = enc
        self.gamma_ = _fitted_gamma(enc)
        return enc

    # -- using the encoder ------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=DTYPES)

    def _data(self, X, normalized: bool = False, raw: bool = False) -> ArrayData:
        return ArrayData(X, None, self.encoder_, normalized=normalized, raw_features=raw)

    def _stack(self, X, fn, width: int, dtype=np.float64, normalized=False) -> np.ndarray:
        """``fn(F)`` of every chunk of rows (features as ``rfcli predict`` computes them:
        8192-row chunks, encoded and decoded), stacked into (n, width)."""
        out = np.empty((len(X), width), dtype=dtype)
        for b in self._data(X, normalized).batches():
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
        ``label``: the label column ``rfcli evaluate`` reads from test data (default: the
        name of the pandas Series given as y, if any)."""
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
        ``rfcli train``): predictions equal ``rfcli predict``'s with that file."""
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
            est.gamma_ = _fitted_gamma(encoder)
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
            "gamma": _fitted_gamma(encoder) or "auto",
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


def _fitted_gamma(encoder: Encoder) -> float | None:
    g = getattr(encoder.fmap, "gamma_", None)
    return None if g is None else float(g)
