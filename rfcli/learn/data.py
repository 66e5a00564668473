"""Feature chunks for learners: decoded from a store (several passes) or encoded on the fly
from raw input.

A store's passes can keep the data in memory between passes, within a byte budget: the
*decoded* float32 features (later passes then cost only the learner's arithmetic) when
they fit ``decoded_bytes``, else the *packed* codes (16x smaller at 2 bits; later passes
decode them again) when they fit ``cache_bytes``, else nothing (every pass reads and
decodes the store, chunk by chunk, and the float feature matrix never exists whole).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from rfcli.encoder import EncodedChunk, Encoder
from rfcli.engines.base import pass_groups
from rfcli.errors import InputError, ParameterTypeError
from rfcli.io import location
from rfcli.io.arrays import ArraySource
from rfcli.io.columns import missing_columns, not_found
from rfcli.io.readers import iter_chunks, open_source, read_range, select_columns
from rfcli.io.sources import ParquetSource
from rfcli.io.store import FeatureStore
from rfcli.random import keyed_uniform

#: packed codes up to this size are kept in memory between passes (compressed: 2-bit
#: codes of 1M rows x 4096 features are 1 GiB)
DEFAULT_CACHE_BYTES = 1 << 30
#: the most memory a learner's in-memory copy of its data takes by default: 2 GiB, and at
#: most a quarter of the machine's memory (see :func:`default_cache_bytes`)
MAX_DEFAULT_CACHE_BYTES = 2 << 30

#: salt of the fold hash (so folds are not the same draw as other keyed hashes of a seed)
_FOLD_KEY = 104729


def default_cache_bytes() -> int:
    """The default in-memory data budget of a many-pass learner: min(2 GiB, physical
    memory / 4)."""
    from rfcli.memory import physical_memory

    return int(min(MAX_DEFAULT_CACHE_BYTES, physical_memory() // 4))


@dataclass
class Batch:
    row0: int
    F: np.ndarray  # float32 (n, m) decoded features
    y: np.ndarray | None  # label values as in the input (numbers or class text)
    ids: dict[str, np.ndarray] = field(default_factory=dict)
    #: the preprocessed inputs (float64, n x d) of raw data read ``with_inputs``, else None
    X: np.ndarray | None = None

    def __len__(self) -> int:
        return self.F.shape[0]


def fold_ids(seed: int, row0: int, n: int, n_folds: int) -> np.ndarray:
    """The cross-validation fold (0 .. n_folds-1) of global rows ``row0 .. row0+n-1``.

    Rows go in consecutive blocks of ``n_folds`` (global row // n_folds); each block is
    dealt to the folds in the order of a random permutation drawn from a keyed hash of
    (seed, block index).  So a row's fold is a pure function of (seed, global row index):
    it depends neither on chunking nor on the engine; fold sizes differ by at most one
    row; and rows stored in label order (or any order) are spread evenly over the
    folds."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.arange(row0, row0 + n)
    blocks = rows // n_folds
    first = int(blocks[0])
    u = keyed_uniform(seed + _FOLD_KEY, np.arange(first, int(blocks[-1]) + 1), n_folds)
    # the rank of each position's hash within its block: a uniform random permutation
    perm = np.argsort(np.argsort(u, axis=1, kind="stable"), axis=1, kind="stable")
    return perm[blocks - first, rows % n_folds].astype(np.int64)


class StoreData:
    """Passes over a store's decoded features and labels (rows ``start .. stop-1``: all of
    them, or one slice of the Dask engine).

    Between passes the rows are kept in memory when a budget allows (see the module
    docstring): decoded features up to ``decoded_bytes`` (0: never), else packed codes up
    to ``cache_bytes``.  Cached feature chunks are handed out read-only, the same arrays on
    every pass (a pass must not modify ``batch.F`` in place)."""

    def __init__(
        self,
        store: FeatureStore,
        normalized: bool = False,
        chunk_rows: int | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        start: int = 0,
        stop: int | None = None,
        decoded_bytes: int = 0,
    ):
        self.store = store
        self.encoder: Encoder = store.encoder
        self.normalized = normalized
        self.chunk_rows = chunk_rows or min(store.chunk_rows, 8192)
        self.start = start
        self.stop = store.n_rows if stop is None else min(stop, store.n_rows)
        self.n_rows = max(self.stop - self.start, 0)
        #: per batch of ``chunk_rows`` rows, once read: (packed chunk, labels) or (row0,
        #: decoded features, labels); None without a cache
        self._cache: list | None = None
        self._decoded: list | None = None
        self._cached = False
        self.set_cache_budget(cache_bytes, decoded_bytes)

    @property
    def packed_bytes(self) -> int:
        """Memory of the packed codes (and per-row norms, scales, labels) of these rows."""
        return self.n_rows * (self.store.layout["row_bytes"] + 16)

    @property
    def decoded_size(self) -> int:
        """Memory of the decoded float32 features (and labels) of these rows."""
        return self.n_rows * (4 * self.encoder.n_features + 8)

    @property
    def n_batches(self) -> int:
        return -(-self.n_rows // self.chunk_rows)

    def set_cache_budget(self, cache_bytes: int, decoded_bytes: int = 0) -> None:
        """Keep the decoded features in memory between passes if they fit ``decoded_bytes``,
        else the packed codes if they fit ``cache_bytes`` (before the first pass; no effect
        after it)."""
        if self._cached:
            return
        decoded = 0 < self.decoded_size <= decoded_bytes
        packed = not decoded and self.packed_bytes <= cache_bytes
        self._decoded = [None] * self.n_batches if decoded else None
        self._cache = [None] * self.n_batches if packed else None

    @property
    def cache_kind(self) -> str:
        """What the passes keep in memory: ``"decoded"``, ``"packed"`` or ``"none"``."""
        if self._decoded is not None:
            return "decoded"
        return "packed" if self._cache is not None else "none"

    @property
    def cache_size(self) -> int:
        """Bytes that :attr:`cache_kind` keeps (0 for none)."""
        kind = self.cache_kind
        return {"decoded": self.decoded_size, "packed": self.packed_bytes}.get(kind, 0)

    @property
    def label_name(self) -> str | None:
        return (self.store.label_info or {}).get("name")

    @property
    def parallel_groups(self) -> bool:
        """Whether threads may read :meth:`groups` at once: a filled cache, or a store read
        by row range from files (raw input seen as a store may read a shared file
        handle)."""
        return self._cached or getattr(self.store, "thread_safe_reads", True)

    def _read(self, j: int) -> tuple[EncodedChunk, np.ndarray | None]:
        """Batch ``j``'s packed codes and labels, from the store."""
        r0 = self.start + j * self.chunk_rows
        r1 = min(r0 + self.chunk_rows, self.stop)
        (ch,) = self.store.iter_encoded(self.chunk_rows, r0, r1)
        return ch, self.store.label_values(r0, r1)

    def _item(self, j: int) -> tuple[int, np.ndarray, np.ndarray | None]:
        """(row0, decoded features, labels) of batch ``j``: from the cache when it holds the
        batch, else read (and kept when a cache is on)."""
        dec = self._decoded
        if dec is not None and dec[j] is not None:
            return dec[j]
        packed = self._cache
        if packed is not None and packed[j] is not None:
            ch, y = packed[j]
        else:
            ch, y = self._read(j)
            if packed is not None:
                packed[j] = (ch, y)
        F = self.encoder.decode(ch.packed, ch.norms, ch.row_scale, self.normalized)
        if dec is not None:
            F.flags.writeable = False  # shared by every later pass
            if y is not None:
                y.flags.writeable = False
            dec[j] = (ch.row0, F, y)
        return ch.row0, F, y

    def _items(self, a: int, b: int) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
        """The items of rows ``a .. b-1`` (relative, whole batches)."""
        for j in range(a // self.chunk_rows, -(-b // self.chunk_rows)):
            yield self._item(j)
        slots = self._decoded if self._decoded is not None else self._cache
        if slots is not None and not self._cached and all(x is not None for x in slots):
            self._cached = True

    def load(self) -> None:
        """Fill the cache now (when the budget allows one)."""
        if self.cache_kind != "none":
            for _ in self._items(0, self.n_rows):
                pass

    def close(self) -> None:
        """Nothing to close (a store is read by path); :class:`RawData` closes its input."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def labels(self) -> Iterator[tuple[int, np.ndarray]]:
        """(row0, label values) per chunk, without decoding features."""
        if self.label_name is None:
            raise InputError(
                f"{self.store.path}: the store has no label column (encode it with a label)"
            )
        if self._cached and self._decoded is not None:
            for r0, _, y in self._decoded:
                yield r0, y
            return
        if self._cached:
            for ch, y in self._cache:
                yield ch.row0, y
            return
        for r0 in range(self.start, self.stop, self.chunk_rows):  # labels only: no codes read
            yield r0, self.store.label_values(r0, min(r0 + self.chunk_rows, self.stop))

    def groups(self) -> list[Rows]:
        """The fixed row groups a local pass is reduced over
        (:func:`rfcli.engines.base.pass_groups`)."""
        return [Rows(self, a, b) for a, b in pass_groups(self.n_rows, self.chunk_rows)]

    def batches(self, with_ids: bool = False, rows: tuple[int, int] | None = None
                ) -> Iterator[Batch]:  # fmt: skip
        """The batches of a pass (of the relative rows ``rows = (a, b)`` only, when given:
        whole batches)."""
        a, b = rows or (0, self.n_rows)
        for r0, F, y in self._items(a, b):
            ids = self.store.ids(r0, r0 + len(F)) if with_ids else {}
            yield Batch(r0, F, y, ids)


class Rows:
    """Rows ``a .. b-1`` of ``data`` (a pass group): its batches, and the rest of the
    data's attributes (encoder, label name, ...)."""

    def __init__(self, data, a: int, b: int):
        self._data, self._rows = data, (a, b)
        self.n_rows = b - a

    def batches(self, with_ids: bool = False) -> Iterator[Batch]:
        return self._data.batches(with_ids, rows=self._rows)

    def __getattr__(self, name):
        return getattr(self._data, name)


class RawData:
    """Passes over raw input (Parquet/CSV/Zarr), encoded on the fly with an encoder: the one
    adapter from raw rows to learner batches, for both engines.

    Batches hold the decoded quantized features (what a model trained on a store sees), or
    with ``raw_features`` the unquantized features (GP regression's statistics), and with
    ``with_inputs`` also the preprocessed inputs they came from (``Batch.X``: the GP's
    input box and (x, y) sample).  Rows
    ``start .. stop-1`` only when given (a Dask task's slice of a Parquet input, which it
    reopens by path on the worker: see :meth:`slice`)."""

    def __init__(self, source, sel, encoder: Encoder, *, normalized: bool = False,
                 raw_features: bool = False, chunk_rows: int = 8192, on_nan: str = "error",
                 start: int = 0, stop: int | None = None, path: str | None = None,
                 with_inputs: bool = False):  # fmt: skip
        if with_inputs and not raw_features:  # pragma: no cover - a caller's mistake
            raise ValueError("with_inputs needs raw_features")
        self.source, self.sel, self.encoder = source, sel, encoder
        self.normalized, self.raw_features = normalized, raw_features
        self.with_inputs = with_inputs
        self.chunk_rows, self.on_nan = chunk_rows, on_nan
        self.path = path if path is not None else source.path
        self.label_name = sel.label
        self.start = start
        self.stop = stop
        self.n_rows = (stop - start) if stop is not None else source.num_rows

    @classmethod
    def open(
        cls,
        path: str,
        encoder: Encoder,
        normalized: bool,
        label: str | None,
        ids: list[str] | None = None,
        chunk_rows: int = 8192,
        fmt: str | None = None,
        require_label: bool = False,
        on_nan: str = "error",
        delimiter: str | None = None,
    ) -> RawData:
        """The input at ``path`` with the columns ``encoder`` needs (refused when some are
        missing), its ``label`` column when it has one (required with ``require_label``) and
        whichever of ``ids`` it has.  Close it (or use it in a ``with``) when done."""
        source = open_source(path, fmt, delimiter=delimiter)
        try:
            return cls._select(source, encoder, normalized=normalized, label=label, ids=ids,
                               chunk_rows=chunk_rows, require_label=require_label,
                               on_nan=on_nan)  # fmt: skip
        except BaseException:
            source.close()
            raise

    @classmethod
    def _select(cls, source, encoder, *, normalized, label, ids, chunk_rows, require_label,
                on_nan) -> RawData:  # fmt: skip
        path = source.path  # in-memory data: its description
        missing = [c for c in encoder.columns if c not in source.names]
        if missing:
            raise InputError(missing_columns(missing, "that the model's map needs", path, source))
        if label is not None and label not in source.names:
            if require_label:
                raise InputError(not_found(path, "label", label, source.names, source.numeric))
            label = None
        ids = [i for i in (ids or []) if i in source.names]
        sel = select_columns(source, encoder.columns, label, ids)
        return cls(source, sel, encoder, normalized=normalized, chunk_rows=chunk_rows,
                   on_nan=on_nan)  # fmt: skip

    def close(self) -> None:
        """Close the input (a CSV spool file is removed)."""
        if self.source is not None:
            self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def slice(self, start: int, stop: int, path: str | None = None) -> RawData:
        """Rows ``start .. stop-1`` of a Parquet input, to be sent to a worker (which opens
        ``path``, by default this input's path)."""
        return RawData(
            None,
            self.sel,
            self.encoder,
            normalized=self.normalized,
            raw_features=self.raw_features,
            chunk_rows=min(self.chunk_rows, stop - start),
            on_nan=self.on_nan,
            start=start,
            stop=stop,
            path=path or self.path,
            with_inputs=self.with_inputs,
        )

    def _chunks(self):
        dtype = self.encoder.input_dtype  # the rows as the encoder reads them best
        if self.source is not None and self.stop is None:
            yield from iter_chunks(self.source, self.sel, self.chunk_rows, self.on_nan, dtype)
            return
        src = self.source if self.source is not None else ParquetSource(self.path)
        try:
            yield from read_range(src, self.sel, self.start, self.stop, self.chunk_rows,
                                  self.on_nan, dtype)  # fmt: skip
        finally:
            if self.source is None:
                src.close()

    @property
    def parallel_groups(self) -> bool:
        """Whether threads may read :meth:`groups` at once: each group of a Parquet input
        opens the file itself; in-memory rows are read by slicing."""
        return isinstance(self.source, ParquetSource | ArraySource)

    def groups(self) -> list[RawData]:
        """The fixed row groups a local pass is reduced over
        (:func:`rfcli.engines.base.pass_groups`): one for input read as a stream (CSV)."""
        if self.stop is not None or not hasattr(self.source, "read_rows"):
            return [self]
        ranges = pass_groups(self.n_rows, self.chunk_rows)
        if len(ranges) == 1:
            return [self]
        parquet = isinstance(self.source, ParquetSource)
        return [
            RawData(
                None if parquet else self.source,
                self.sel,
                self.encoder,
                normalized=self.normalized,
                raw_features=self.raw_features,
                chunk_rows=self.chunk_rows,
                on_nan=self.on_nan,
                start=a,
                stop=b,
                path=self.path,
                with_inputs=self.with_inputs,
            )  # fmt: skip
            for a, b in ranges
        ]

    def batches(self, with_ids: bool = True) -> Iterator[Batch]:
        enc = self.encoder
        for ch in self._chunks():
            X = None
            if self.with_inputs:
                X = np.asarray(enc.preprocess.transform(ch.X), dtype=np.float64)
                F = enc.fmap.transform(X)
            elif self.raw_features:
                F = enc.features(ch.X)
            else:
                e = enc.encode_chunk(ch.X, ch.row0)
                F = enc.decode(e.packed, e.norms, e.row_scale, self.normalized)
            yield Batch(ch.row0, F, ch.label, ch.ids if with_ids else {}, X)


def open_data(
    path: str,
    encoder: Encoder,
    normalized: bool,
    label: str | None,
    ids: list[str] | None = None,
    require_label: bool = False,
    chunk_rows: int | None = None,
):
    """A store encoded with ``encoder`` (checked by fingerprint) or raw data; ``chunk_rows``:
    rows per batch (default: a store's chunks, 8192 rows of raw data)."""
    if location.is_store(path):
        from rfcli.io.store.read import open_group

        attrs = dict(open_group(path).attrs)
        if "rfcli" in attrs:
            store = FeatureStore(path)
            encoder.check_same(store.encoder, what=f"store {path}")
            data = StoreData(store, normalized, chunk_rows=chunk_rows)
            if require_label and data.label_name is None:
                raise InputError(f"{path}: the store has no label column")
            return data
    if not isinstance(normalized, bool):
        raise ParameterTypeError(f"normalized must be a boolean, got {normalized!r}")
    return RawData.open(
        path, encoder, normalized, label, ids, chunk_rows or 8192, require_label=require_label
    )
