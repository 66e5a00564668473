"""Feature-map base class.

A map is configured in its constructor, draws its random arrays once in :meth:`fit`
(from an explicit integer seed, into public attributes ending in ``_``) and transforms
chunks with a few vectorized lines.  Its state is ``(config, arrays)``: a JSON-able dict
with a ``kind`` plus named NumPy arrays, so stores and model files keep the drawn arrays
themselves, not only the seed, so a store can be extended or a test set encoded
identically on another machine or NumPy version.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rfcli.errors import ConfigError
from rfcli.registry import Registry, require

MAPS = Registry("feature map")


class FeatureMap:
    """Base class of random-feature maps.

    A map turns preprocessed rows ``X`` (n, d) into raw feature values ``z`` (n, m)
    whose law is ``value_law``; the estimator's features are
    ``F(x) = feature_scale * row_scale(x) * z(x)`` with ``row_scale`` 1 unless the map
    says otherwise (arc-cosine order 1 stores the input row norm).  A map is drawn from
    its seed alone (the same seed, the same features on any machine), and fitted on the
    data where it needs to be (a bandwidth, data-dependent constants).

    Parameters
    ----------
    n_features : int
        The number of features m.
    seed : int, default=0
        The seed of the drawn weights.

    Attributes
    ----------
    kind : str
        The kernel (:data:`rfcli.KERNELS`).
    value_law : str
        The law of the raw values z, which decides the quantizers that apply
        ("arcsine" for cosine features).
    default_quantizer : str
        The quantizer used when none is asked for.
    uses_row_scale : bool
        Whether the features carry a per-row scale (arc-cosine order 1).
    n_inputs_ : int or None
        The input dimension d, once fitted.
    """

    kind: str  # every constructor takes ``kind`` first (one class may serve several kinds)
    #: law of raw values z, which decides the quantizers that apply
    value_law: ClassVar[str] = "arcsine"
    default_quantizer: ClassVar[str] = "lm"
    uses_row_scale: ClassVar[bool] = False
    #: True when fit() needs the bounding box of the (preprocessed) training rows
    needs_box: ClassVar[bool] = False
    #: names of the drawn/fitted arrays (attributes with a trailing underscore)
    array_names: ClassVar[tuple[str, ...]] = ()
    #: the dtype transform_raw computes on: float32 for maps that round their (preprocessed)
    #: inputs to float32 first, so an encode may read them as float32 (same values)
    input_dtype: ClassVar[type] = np.float64
    #: True when ``transform_raw(X)`` is ``(np.cos(transform_phase(X)), None)``: cosine
    #: features, whose threshold codes the encoder finds from the phases in turns
    #: (``transform_turns``; no cosine)
    cosine_phase: ClassVar[bool] = False

    def __init__(self, n_features: int, seed: int = 0):
        self.n_features = int(n_features)
        self.seed = int(seed)
        self.n_inputs_: int | None = None

    # -- fitting ----------------------------------------------------------------------
    @property
    def needs_sample(self) -> bool:
        """True when fit() needs a sample of (preprocessed) rows, e.g. gamma='auto'."""
        return False

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> FeatureMap:
        """Draw the weights for ``n_inputs`` inputs and fit what depends on the data (a
        bandwidth from ``sample``); a map with :attr:`needs_pass` is complete after
        :meth:`finish_pass`.

        Parameters
        ----------
        n_inputs : int
            The input dimension d.
        sample : ndarray of shape (k, d) or None, default=None
            A sample of preprocessed rows (:attr:`needs_sample`: the fit needs one).

        Returns
        -------
        FeatureMap
            ``self``, fitted.
        """
        raise NotImplementedError

    #: reductions over all (preprocessed) training rows that a sample cannot give, e.g.
    #: TRF's mean squared norm or the positive features' kappa: name -> "sum" | "max".
    #: When non-empty, the encoder runs one pass after fit(): pass_values() per chunk,
    #: reduced by :class:`RowReducer`, then finish_pass() with the totals.
    pass_reductions: ClassVar[dict[str, str]] = {}

    @property
    def needs_pass(self) -> bool:
        """True when the fit needs a pass over all training rows (``pass_reductions``)."""
        return bool(self.pass_reductions)

    def pass_values(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Per-row float64 values to reduce, for each name of ``pass_reductions``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        dict of str to ndarray of shape (n,)
            The values by reduction name (empty for maps without a pass).
        """
        return {}

    def finish_pass(self, totals: dict[str, float], n_rows: int) -> None:
        """Complete the fit from the reduced values (called after the pass).

        Parameters
        ----------
        totals : dict of str to float
            The reduced values by name (:class:`RowReducer`).
        n_rows : int
            The rows reduced.
        """

    def fit_data(self, X: np.ndarray) -> FeatureMap:
        """Fit on in-memory preprocessed rows: :meth:`fit` with X as the sample, then the
        pass.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        FeatureMap
            ``self``, fitted.
        """
        X = np.asarray(X, dtype=np.float64)
        self.fit(X.shape[1], X if self.needs_sample else None)
        if self.needs_pass:
            r = RowReducer(self.pass_reductions)
            r.update(0, self.pass_values(X))
            self.finish_pass(r.totals(), r.n)
        return self

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` (or :meth:`from_state`) has run."""
        return self.n_inputs_ is not None

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise RuntimeError(f"{type(self).__name__} is not fitted")

    def estimate_bytes(self, n_inputs: int) -> int:
        """About how much memory the drawn arrays take (for memory budgets).

        Parameters
        ----------
        n_inputs : int
            The input dimension d.

        Returns
        -------
        int
            Bytes.
        """
        return 4 * (n_inputs + 2) * self.n_features

    # -- transform --------------------------------------------------------------------
    @property
    def feature_scale(self) -> float:
        """The factor of the raw values in the features, ``sqrt(2/m)`` by default."""
        return float(np.sqrt(2.0 / self.n_features))

    def transform_raw(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The raw feature values and the row scale.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        z : ndarray of shape (n, m), float32
            The raw values (of law :attr:`value_law`).
        row_scale : ndarray of shape (n,), float32, or None
            The per-row scale (arc-cosine order 1), else None.
        """
        raise NotImplementedError

    def transform_phase(self, X: np.ndarray) -> np.ndarray:
        """The phases of cosine features ``z = cos(t)`` (maps with ``cosine_phase``).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, m), float32
            The phases t.

        Raises
        ------
        NotImplementedError
            A map without phases.
        """
        raise NotImplementedError(f"the {self.kind} map has no phases")

    def transform_turns(self, X: np.ndarray) -> np.ndarray:
        """The phases in turns ``u = t / 2 pi`` of cosine features ``z = cos(2 pi u)``
        (maps with ``cosine_phase``), computed as one product: a threshold quantizer's
        codes follow from them exactly (docs/store-format.md, Codes from the phase).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, m), float32
            The phases in turns.

        Raises
        ------
        NotImplementedError
            A map without phases.
        """
        raise NotImplementedError(f"the {self.kind} map has no phases")

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Full-precision features ``F(x)``: ``F(x).F(y)`` estimates k(x, y).

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, m), float32
            The features.
        """
        z, row_scale = self.transform_raw(X)
        z *= np.float32(self.feature_scale)
        if row_scale is not None:
            z *= row_scale[:, None]
        return z

    def kernel(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """The exact kernel this map approximates.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Preprocessed rows.
        Y : ndarray of shape (k, d)
            Preprocessed rows.

        Returns
        -------
        ndarray of shape (n, k), float64
            ``k(x_i, y_j)``.
        """
        raise NotImplementedError

    # -- state ------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """Constructor parameters besides n_features and seed.

        Returns
        -------
        dict
            JSON types.
        """
        return {}

    def fitted_params(self) -> dict[str, Any]:
        """Scalars fitted in :meth:`fit` (a bandwidth, data-dependent constants).

        Returns
        -------
        dict
            JSON types.
        """
        return {}

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted map as JSON config and arrays (what stores and model files keep).

        Returns
        -------
        config : dict
            ``kind``, ``n_features``, ``seed``, ``n_inputs``, :meth:`params` and the
            :meth:`fitted_params`.
        arrays : dict of str to ndarray
            The drawn and fitted arrays (``W``, ``tau``, ...).

        Raises
        ------
        RuntimeError
            An unfitted map.
        """
        self._check_fitted()
        config = {
            "kind": self.kind,
            "n_features": self.n_features,
            "seed": self.seed,
            "n_inputs": self.n_inputs_,
            **self.params(),
            "fitted": self.fitted_params(),
        }
        arrays = {name.rstrip("_"): getattr(self, name) for name in self.array_names}
        return config, arrays

    @classmethod
    def from_state(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> FeatureMap:
        """The fitted map :meth:`to_state` describes, of the class of its kind.

        Parameters
        ----------
        config : dict
            :meth:`to_state`'s config.
        arrays : dict of str to ndarray
            :meth:`to_state`'s arrays.

        Returns
        -------
        FeatureMap
            The map.

        Raises
        ------
        ConfigError
            An unknown kind, bad parameters, or arrays missing or of the wrong shape.
        """
        kind = require(config, "kind", str, "map")
        klass = MAPS.get(kind)
        kwargs = {k: v for k, v in config.items() if k not in ("kind", "n_inputs", "fitted")}
        try:
            obj = klass(kind=kind, **kwargs)
        except TypeError as e:
            raise ConfigError(f"map {kind}: bad parameters ({e})") from None
        obj.n_inputs_ = require(config, "n_inputs", int, "map")
        obj._set_fitted(config.get("fitted", {}))
        for name in obj.array_names:
            key = name.rstrip("_")
            if key not in arrays:
                raise ConfigError(f"map {kind}: array {key!r} is missing")
            setattr(obj, name, np.asarray(arrays[key]))
        obj._check_arrays()
        return obj

    def _set_fitted(self, fitted: dict[str, Any]) -> None:
        for k, v in fitted.items():
            setattr(self, k + "_", v)

    def _check_arrays(self) -> None:
        """Validate loaded arrays' shapes (override where arrays exist)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FeatureMap) or not (self.fitted and other.fitted):
            return NotImplemented
        c1, a1 = self.to_state()
        c2, a2 = other.to_state()
        return c1 == c2 and a1.keys() == a2.keys() and all(np.array_equal(a1[k], a2[k]) for k in a1)

    __hash__ = None  # type: ignore[assignment]

    def describe(self) -> str:
        """The map in words (its kind, and options that change it).

        Returns
        -------
        str
            The description.
        """
        return self.kind


class RowReducer:
    """Sums and maxima of per-row values over the training rows, bit-identical for any
    chunking: sums are taken over fixed blocks of ``block`` consecutive global rows (each
    block summed at once when complete) and the block sums added in order; maxima are
    exact anyway.  Chunks must arrive in row order."""

    def __init__(self, reductions: dict[str, str], block: int = 4096, row0: int = 0):
        self.reductions = dict(reductions)
        self.block = block
        self.row0 = row0  # first row (a multiple of block for partial reducers)
        self.n = 0
        self._maxes = {k: -np.inf for k, r in self.reductions.items() if r == "max"}
        #: per sum key: rows of the current block, and the sums of the finished blocks
        self._pending: dict[str, list[np.ndarray]] = {
            k: [] for k, r in self.reductions.items() if r == "sum"
        }
        self._block_sums: dict[str, list[float]] = {k: [] for k in self._pending}

    def update(self, row0: int, values: dict[str, np.ndarray]) -> None:
        if row0 != self.row0 + self.n:
            raise ValueError(f"rows must come in order: expected {self.row0 + self.n}, got {row0}")
        n = None
        for k, v in values.items():
            v = np.asarray(v, dtype=np.float64).ravel()
            n = v.size if n is None else n
            if k in self._maxes and v.size:
                self._maxes[k] = max(self._maxes[k], float(v.max()))
            elif k in self._pending:
                self._add_sum(k, v)
        self.n += n or 0

    def _add_sum(self, key: str, v: np.ndarray) -> None:
        pos = self.row0 + self.n
        pending = self._pending[key]
        while v.size:
            room = self.block - pos % self.block
            pending.append(v[:room])
            pos += min(room, v.size)
            v = v[room:]
            if pos % self.block == 0:
                self._block_sums[key].append(float(np.sum(np.concatenate(pending))))
                pending.clear()

    def _close_blocks(self) -> None:
        for k, rest in self._pending.items():
            if rest:
                self._block_sums[k].append(float(np.sum(np.concatenate(rest))))
                rest.clear()

    def totals(self) -> dict[str, float]:
        """Maxima, and sums as the in-order sum of the block sums."""
        self._close_blocks()
        out = dict(self._maxes)
        for k, sums in self._block_sums.items():
            total = 0.0
            for s in sums:
                total += s
            out[k] = total
        return out

    @classmethod
    def merge_ordered(cls, parts: list[RowReducer]) -> RowReducer:
        """Merge reducers of consecutive row ranges (each starting on a block boundary):
        the block sums are concatenated in row order, so totals() adds exactly what one
        pass over all rows adds."""
        out = cls(parts[0].reductions, parts[0].block)
        for p in parts:
            p._close_blocks()
            for k in out._block_sums:
                out._block_sums[k].extend(p._block_sums[k])
            for k in out._maxes:
                out._maxes[k] = max(out._maxes[k], p._maxes[k])
            out.n += p.n
        return out


def check_n_features(m: int, name: str = "n_features") -> int:
    """``m`` as an int >= 1; errors name the parameter ``name``."""
    from rfcli.errors import check_int

    return check_int(m, name, 1)


def pairwise_sq_dists(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, float64, clipped at 0."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    d = (X**2).sum(1)[:, None] + (Y**2).sum(1)[None, :] - 2.0 * X @ Y.T
    return np.maximum(d, 0.0)
