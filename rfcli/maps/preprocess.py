"""Row preprocessing fitted on the training input and stored with the map
(docs/methods.md, Preprocessing).

* ``standardize``: column z-scores ``(x - mean) / std`` (std of 0 is treated as 1),
  statistics accumulated in float64 over the whole training input in one streaming pass,
  bit-identical whatever the chunk size (see :class:`ColumnStats`).
* ``normalize_rows``: each row scaled to unit L2 norm (the "instance normalization" of
  Li & Li, ICML 2021); applied after standardization when both are asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.errors import ConfigError
from rfcli.registry import require


def merged_moments(na: int, ma, qa, nb: int, mb, qb):
    """(mean, sum of squared deviations from it) of two parts' rows, from each part's count
    n, mean m and sum of squared deviations q (Chan, Golub & LeVeque, "Algorithms for
    computing the sample variance", The American Statistician 1983): no sums of squares of
    the values themselves, which lose the digits below an offset.  Scalars or arrays (per
    column); two empty parts give (0, 0)."""
    n = na + nb
    if not n:
        return ma * 0.0, qa * 0.0
    delta = mb - ma
    return ma + delta * (nb / n), qa + qb + delta**2 * (na * nb / n)


class ColumnStats:
    """Streaming count, mean and sum of squared deviations per column (float64).

    Rows are grouped into fixed blocks of ``block`` consecutive rows; each block's mean and
    M2 are merged in order (Chan et al.'s pairwise update).  The blocks do not depend on
    how the input was chunked, so the statistics are bit-identical for any chunk size.
    """

    def __init__(self, d: int, block: int = 4096, record: bool = False):
        self.block = block
        #: with ``record``, each block's (n, mean, m2) is kept instead of merged, so partial
        #: statistics of consecutive row ranges (aligned to ``block``) can be merged later in
        #: order with exactly the local arithmetic (:meth:`merge_ordered`)
        self.blocks: list[tuple[int, np.ndarray, np.ndarray]] | None = [] if record else None
        self.n = 0
        self.mean = np.zeros(d)
        self.m2 = np.zeros(d)
        self.min = np.full(d, np.inf)
        self.max = np.full(d, -np.inf)
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0

    def update(self, X: np.ndarray) -> None:
        X = np.asarray(X, dtype=np.float64)
        if len(X):
            np.minimum(self.min, X.min(axis=0), out=self.min)
            np.maximum(self.max, X.max(axis=0), out=self.max)
        while len(X):
            take = min(len(X), self.block - self._pending_rows)
            self._pending.append(X[:take])
            self._pending_rows += take
            X = X[take:]
            if self._pending_rows == self.block:
                self._merge_pending()

    def _merge_pending(self) -> None:
        if not self._pending_rows:
            return
        B = np.concatenate(self._pending)
        self._pending, self._pending_rows = [], 0
        nb = B.shape[0]
        mb = B.mean(axis=0)
        m2b = ((B - mb) ** 2).sum(axis=0)
        if self.blocks is not None:
            self.blocks.append((nb, mb, m2b))
            return
        self._merge_block(nb, mb, m2b)

    def _merge_block(self, nb: int, mb: np.ndarray, m2b: np.ndarray) -> None:
        self.mean, self.m2 = merged_moments(self.n, self.mean, self.m2, nb, mb, m2b)
        self.n += nb

    def finish(self) -> ColumnStats:
        self._merge_pending()
        return self

    @classmethod
    def merge_ordered(cls, parts: list[ColumnStats]) -> ColumnStats:
        """Merge recorded partial statistics of consecutive row ranges, in row order: the
        same block merges, in the same order, as one pass over all rows."""
        d = parts[0].mean.size
        out = cls(d, parts[0].block)
        for p in parts:
            p.finish()
            for nb, mb, m2b in p.blocks:
                out._merge_block(nb, mb, m2b)
            np.minimum(out.min, p.min, out=out.min)
            np.maximum(out.max, p.max, out=out.max)
        return out

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.m2 / max(self.n, 1))


class Preprocessor:
    """Standardization and/or row normalization; identity when both are off.

    Parameters
    ----------
    standardize : bool, default=False
        z-score each column with the training rows' mean and standard deviation (a
        constant column is centred only).
    normalize_rows : bool, default=False
        Scale each (standardized) row to unit Euclidean norm.

    Attributes
    ----------
    mean_ : ndarray of shape (d,) or None
        The columns' means (with ``standardize``, once fitted).
    scale_ : ndarray of shape (d,) or None
        The columns' standard deviations (1 where a column is constant).
    """

    def __init__(self, standardize: bool = False, normalize_rows: bool = False):
        self.standardize = bool(standardize)
        self.normalize_rows = bool(normalize_rows)
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None

    @property
    def needs_stats(self) -> bool:
        """Whether fitting needs the columns' statistics (``standardize``)."""
        return self.standardize

    def fit_stats(self, stats: ColumnStats) -> Preprocessor:
        """Fit the standardization from the training rows' column statistics.

        Parameters
        ----------
        stats : ColumnStats
            The columns' statistics of the fitting pass (in fixed row blocks: the same
            for any chunking).

        Returns
        -------
        Preprocessor
            ``self``, fitted.
        """
        if self.standardize:
            stats.finish()
            std = stats.std
            self.mean_ = stats.mean.copy()
            self.scale_ = np.where(std > 0, std, 1.0)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The preprocessed rows.

        Parameters
        ----------
        X : ndarray of shape (n, d)
            Raw rows.

        Returns
        -------
        ndarray of shape (n, d)
            Standardized and/or unit rows, float64 (X itself, as float32 or float64, when
            both steps are off).
        """
        if not (self.standardize or self.normalize_rows):  # nothing to do: no copy
            X = np.asarray(X)
            return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
        X = np.array(X, dtype=np.float64, copy=True, order="C")  # row sums in one order
        if self.standardize:
            X -= self.mean_
            X /= self.scale_
        if self.normalize_rows:
            n = np.linalg.norm(X, axis=1)
            X /= np.where(n > 0, n, 1.0)[:, None]
        return X

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The preprocessing as JSON config and arrays.

        Returns
        -------
        config : dict
            ``standardize``, ``normalize_rows``.
        arrays : dict of str to ndarray
            ``mean`` and ``scale`` with ``standardize``.
        """
        config = {"standardize": self.standardize, "normalize_rows": self.normalize_rows}
        arrays = {"mean": self.mean_, "scale": self.scale_} if self.standardize else {}
        return config, arrays

    @classmethod
    def from_state(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> Preprocessor:
        """The preprocessing :meth:`to_state` describes.

        Parameters
        ----------
        config : dict
            :meth:`to_state`'s config.
        arrays : dict of str to ndarray
            :meth:`to_state`'s arrays.

        Returns
        -------
        Preprocessor
            The fitted preprocessing.

        Raises
        ------
        ConfigError
            A missing field or array.
        """
        p = cls(
            standardize=require(config, "standardize", bool, "preprocess"),
            normalize_rows=require(config, "normalize_rows", bool, "preprocess"),
        )
        if p.standardize:
            if "mean" not in arrays or "scale" not in arrays:
                raise ConfigError("preprocess: standardize needs arrays 'mean' and 'scale'")
            p.mean_ = np.asarray(arrays["mean"], dtype=np.float64)
            p.scale_ = np.asarray(arrays["scale"], dtype=np.float64)
        return p

    def describe(self) -> str:
        """The steps in words (``standardize, normalize-rows``, or ``none``).

        Returns
        -------
        str
            The description.
        """
        parts = [
            n
            for n, on in (
                ("standardize", self.standardize),
                ("normalize-rows", self.normalize_rows),
            )
            if on
        ]
        return ", ".join(parts) or "none"
