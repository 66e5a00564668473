"""``RandomFeatures``: the encoder as a scikit-learn transformer."""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from rfcli.encoder import EncodedChunk
from rfcli.errors import ConfigError, UsageError
from rfcli.io.arrays import ArraySource
from rfcli.sklearn._common import DTYPES, RFEstimator, fitted_gamma, keep_params, label_name


class RandomFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, RFEstimator):
    """Compressed random features of in-memory rows: preprocessing, a random-feature map
    and a quantizer (an :class:`rfcli.Encoder`), fitted on the rows given to ``fit``
    exactly as ``rfcli encode`` fits them on a file.

    ``transform(X)`` returns float32 features ``F`` whose inner products estimate the
    kernel, ``F(x).F(y) ~ k(x, y)`` (decoded from the b-bit codes: Li & Li, "Quantization
    Algorithms for Random Fourier Features", ICML 2021); ``encode(X)`` returns the packed
    codes and row norms themselves (``b/32`` of the float32 size) and :meth:`decode`
    turns them into the same features.

    Parameters
    ----------
    kernel : str, default="gaussian"
        One of ``rfcli.KERNELS``: gaussian ``exp(-gamma ||x-y||^2)``, laplacian, matern12/
        32/52, arccos0/1, positive, ternary, activation, ntk, glf (docs/methods.md).
    n_features : int or None, default=None
        Random features m; None: 1024, or what ``row_bytes`` hold at ``bits``.
    bits : int, "auto" or None, default=None
        Bits per feature: None is the quantizer's default (2 for lm, lm2, stoc, uniform;
        1 for sign and binary; 32 for none); "auto" (with ``row_bytes``, needs y): the
        b of 1, 2, 3, 4, 8 with m = 8 row_bytes / b chosen with gamma by the validation of
        ``gamma="search"`` (docs/methods.md, Bits for a budget).
    quantizer : str or None, default=None
        lm (Lloyd-Max for the features' arcsine law), lm2, stoc, uniform, sign, empirical,
        none (float32), ...; None is the map's default (lm for Fourier features).
    gamma : float, "auto" or "search", default="auto"
        Bandwidth; "auto": the median heuristic on a 1000-row hash sample; "search":
        chosen by 3-fold validation of ridge regression on that labelled sample (needs y).
    standardize, normalize_rows : bool, default=False
        Z-score the columns (statistics of the fitted rows); scale rows to unit norm.
    kernel_params : dict or None, default=None
        Options of the other maps (e.g. ``{"depth": 2}`` for ntk, ``{"target": "relu"}``
        for ternary; see ``rfcli.maps.MAP_OPTIONS``).
    normalized : bool, default=False
        ``transform`` returns unit rows (the normalized estimator of Li & Li 2021).
    random_state : int, RandomState or None, default=0
        The map's seed (an int is used as rfcli's seed, e.g. ``--seed`` of the CLI).
    row_bytes : int or None, default=None
        A storage budget: bytes of codes per row; sets ``n_features`` = 8 row_bytes / bits.

    Attributes
    ----------
    encoder_ : rfcli.Encoder
    gamma_ : float or None
        The fitted bandwidth (None for maps without one).
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> from rfcli.sklearn import RandomFeatures
    >>> X = np.random.default_rng(0).normal(size=(300, 5))
    >>> rf = RandomFeatures(n_features=4096, gamma=0.1).fit(X)
    >>> F = rf.transform(X)
    >>> F.shape, F.dtype
    ((300, 4096), dtype('float32'))
    >>> exact = np.exp(-0.1 * np.sum((X[0] - X[1]) ** 2))
    >>> bool(abs(F[0] @ F[1] - exact) < 0.1)
    True
    >>> codes = rf.encode(X)
    >>> codes.packed.shape  # 2 bits per feature
    (300, 1024)
    >>> bool(np.array_equal(rf.decode(codes), F))
    True
    """

    _model_kinds = ()

    def __init__(self, kernel="gaussian", n_features=None, bits=None, quantizer=None, gamma="auto",
                 standardize=False, normalize_rows=False, kernel_params=None, normalized=False,
                 random_state=0, row_bytes=None):  # fmt: skip
        keep_params(self, locals())

    def fit(self, X, y=None):
        """Fit the preprocessing, the map (bandwidth, data-dependent constants) and a
        fitted quantizer on X (y only for ``gamma="search"``), as ``rfcli encode`` fits
        them (:func:`rfcli.jobs.encode.fit_encoder`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows (NumPy array, pandas DataFrame or pyarrow Table).
        y : array-like of shape (n_samples,) or None, default=None
            Labels, needed only by ``gamma="search"`` and ``bits="auto"``.

        Returns
        -------
        self : RandomFeatures
            The fitted transformer.

        Raises
        ------
        UsageError
            A bad parameter, or ``gamma="search"`` / ``bits="auto"`` without y.
        """
        from rfcli.jobs.encode import fit_encoder

        self._encode_settings(0).validate()  # the parameters, before any work
        name = label_name(y)
        validated = self.gamma == "search" or self.bits == "auto"
        if y is None or not validated:
            if self.gamma == "search":
                raise UsageError(
                    "gamma='search' chooses the bandwidth by validation: give y to fit"
                )
            if self.bits == "auto":
                raise UsageError("bits='auto' chooses the bits by validation: give y to fit")
            X = validate_data(self, X, dtype=DTYPES, ensure_min_samples=2)
            labels = None
        else:
            X, y = validate_data(self, X, y, dtype=DTYPES, ensure_min_samples=2)
            self.label_name_ = name
            labels = _search_labels(y)
        source, read = self._source(X, labels)
        self.encoder_ = fit_encoder(source, self._encode_settings(self._new_seed()), read)
        self.gamma_ = fitted_gamma(self.encoder_)
        return self

    @property
    def _n_features_out(self) -> int:
        return self.encoder_.n_features

    def transform(self, X) -> np.ndarray:
        """Decoded features: ``F(x).F(y)`` estimates k(x, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows.

        Returns
        -------
        ndarray of shape (n_samples, n_features), float32
            The features (unit rows with ``normalized=True``).
        """
        X = self._check_X(X)
        return self._stack(X, lambda F: F, self.encoder_.n_features, np.float32,
                           normalized=self.normalized)  # fmt: skip

    def encode(self, X) -> EncodedChunk:
        """The packed codes of X's rows, their norms ``||Q(z)||`` and, for arc-cosine order
        1, the input row norms: what a store keeps.  Rows are numbered from 0 (the stoc
        quantizer's hash uses the row index).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in)
            The rows.

        Returns
        -------
        EncodedChunk
            ``packed`` (uint8 (n, row_bytes)), ``norms`` (float32 (n,)) and ``row_scale``
            (float32 (n,), or None for maps without a row scale).
        """
        from rfcli.io.encoded import EncodedInput
        from rfcli.io.readers import select_columns

        X = self._check_X(X)
        enc = self.encoder_
        n = len(X)
        packed = np.empty((n, enc.row_bytes), dtype=np.uint8)
        norms = np.empty(n, dtype=np.float32)
        scale = np.empty(n, dtype=np.float32) if enc.fmap.uses_row_scale else None
        source = ArraySource(X, names=list(enc.columns))
        for e in EncodedInput(source, select_columns(source, enc.columns), enc).iter_encoded():
            sl = slice(e.row0, e.row0 + len(e.packed))
            packed[sl], norms[sl] = e.packed, e.norms
            if scale is not None:
                scale[sl] = e.row_scale
        return EncodedChunk(0, packed, norms, scale)

    def decode(self, codes, norms=None, row_scale=None, normalized=None) -> np.ndarray:
        """Features from :meth:`encode`'s result (or its ``packed``, ``norms`` and
        ``row_scale`` arrays).

        Parameters
        ----------
        codes : EncodedChunk or array-like of shape (n_samples, row_bytes), uint8
            :meth:`encode`'s result, or its packed codes.
        norms : array-like of shape (n_samples,) or None, default=None
            The codes' norms (taken from ``codes`` when it is an EncodedChunk).
        row_scale : array-like of shape (n_samples,) or None, default=None
            The input row norms of the arc-cosine order-1 map.
        normalized : bool or None, default=None
            Unit rows; None: the estimator's ``normalized``.

        Returns
        -------
        ndarray of shape (n_samples, n_features), float32
            The decoded features, as :meth:`transform` gives them.

        Raises
        ------
        ValueError
            Codes of another shape, or the norms missing.
        """
        check_is_fitted(self)
        if isinstance(codes, EncodedChunk):
            codes, norms, row_scale = codes.packed, codes.norms, codes.row_scale
        enc = self.encoder_
        codes = np.asarray(codes, dtype=np.uint8)
        if codes.ndim != 2 or codes.shape[1] != enc.row_bytes:
            raise ValueError(
                f"codes must have shape (n, {enc.row_bytes}) for this encoder, got {codes.shape}"
            )
        if norms is None:
            raise ValueError("decode needs the row norms (encode's norms)")
        if enc.fmap.uses_row_scale and row_scale is None:
            raise ValueError(f"the {enc.fmap.kind} map needs the row norms (row_scale)")
        normalized = self.normalized if normalized is None else normalized
        return enc.decode(codes, np.asarray(norms, dtype=np.float32),
                          None if row_scale is None else np.asarray(row_scale, np.float32),
                          normalized)  # fmt: skip

    def write_store(self, path: str, X, y=None, *, label: str = "label",
                    overwrite: bool = False) -> str:  # fmt: skip
        """Encode X (and its label y) into a feature store at ``path`` with this encoder, as
        ``rfcli encode --like`` writes one (:func:`rfcli.jobs.encode.encode`): ``rfcli
        train`` trains on it and ``rfcli encode --like`` encodes more data like it.

        Parameters
        ----------
        path : str
            The store to write.
        X : array-like of shape (n_samples, n_features_in)
            The rows.
        y : array-like of shape (n_samples,) or None, default=None
            Their labels.
        label : str, default="label"
            The name of the label column in the store.
        overwrite : bool, default=False
            Replace an existing store.

        Returns
        -------
        str
            The store's path.

        Raises
        ------
        OutputError
            ``path`` exists (without ``overwrite``).
        """
        from rfcli.jobs.encode import encode

        X = self._check_X(X)
        y = None if y is None else np.asarray(y)
        source, read = self._source(X, y, label, names=list(self.encoder_.columns))
        return encode(source, path, read=read, like=self.encoder_, overwrite=overwrite).path

    def save(self, path, **kw):
        """Refused: a transformer has no model to save (:meth:`write_store` writes a
        feature store, :meth:`load` reads the encoder of a store or model file).

        Parameters
        ----------
        path : str
            Unused.
        **kw
            Unused.

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError(
            "a transformer has no model to save: write_store(path, X) writes a feature store "
            "(what `rfcli train` reads), and RandomFeatures.load reads the encoder of a "
            "store or a model file"
        )

    @classmethod
    def load(cls, path: str) -> RandomFeatures:
        """The encoder of a feature store (``rfcli encode``) or of a model file, as a fitted
        transformer: its features equal the store's decoded features for the same rows.

        Parameters
        ----------
        path : str
            A feature store or an rfcli model file.

        Returns
        -------
        RandomFeatures
            The fitted transformer.

        Raises
        ------
        StoreError, ConfigError
            Not a readable store or model file, or an encoder without input columns.
        """
        from rfcli.io import location

        if location.is_store(path):
            from rfcli.io.store import FeatureStore

            enc = FeatureStore(path).encoder
            meta: dict = {}
        else:
            from rfcli.learn.model_file import load_model

            _, enc, meta = load_model(path)
        d = enc.describe()
        est = cls(kernel=d["kernel"], n_features=d["features"], bits=enc.quantizer.bits,
                  quantizer=d["quantizer"], gamma=getattr(enc.fmap, "gamma_", None) or "auto",
                  standardize=d["preprocess"]["standardize"],
                  normalize_rows=d["preprocess"]["normalize_rows"],
                  random_state=enc.fmap.seed)  # fmt: skip
        if not enc.columns:
            raise ConfigError(f"{path}: the encoder lists no input columns")
        est.encoder_ = enc
        est.gamma_ = getattr(enc.fmap, "gamma_", None)
        est.n_features_in_ = len(enc.columns)
        # column names of a file, or of the DataFrame a Python model was fitted on
        if (meta.get("sklearn") or {}).get("feature_names_in", True):
            est.feature_names_in_ = np.asarray(enc.columns, dtype=object)
        est._seed = enc.fmap.seed
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]  # the output is float32
        return tags


def _search_labels(y) -> np.ndarray:
    """Labels for the gamma search: float for a continuous target (regression), else
    class indices (classification)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError("gamma='search' needs a 1-D y (one target)")
    if type_of_target(y) == "continuous":
        return y.astype(np.float64)
    return np.unique(y, return_inverse=True)[1]
