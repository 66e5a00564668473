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
from rfcli.errors import InputError, ParameterTypeError
from rfcli.io import location
from rfcli.io.arrays import unnamed_hint
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
        self._cache: list[tuple[EncodedChunk, np.ndarray | None]] | None = None
        self._decoded: list[tuple[int, np.ndarray, np.ndarray | None]] | None = None
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

    def set_cache_budget(self, cache_bytes: int, decoded_bytes: int = 0) -> None:
        """Keep the decoded features in memory between passes if they fit ``decoded_bytes``,
        else the packed codes if they fit ``cache_bytes`` (before the first pass; no effect
        after it)."""
        if self._cached:
            return
        self._decoded = [] if 0 < self.decoded_size <= decoded_bytes else None
        packed = self._decoded is None and self.packed_bytes <= cache_bytes
        self._cache = [] if packed else None

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

    def _encoded(self) -> Iterator[tuple[EncodedChunk, np.ndarray | None]]:
        if self._cached:
            yield from self._cache
            return
        fill = self._cache is not None
        if fill:
            self._cache = []  # (an abandoned pass left a partial list)
        for ch in self.store.iter_encoded(self.chunk_rows, self.start, self.stop):
            item = (ch, self.store.label_values(ch.row0, ch.row0 + len(ch.packed)))
            if fill:
                self._cache.append(item)
            yield item
        self._cached = fill

    def _features(self) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
        """(row0, decoded features, label values) per chunk: from the decoded cache when it
        is filled, else decoded now (and kept when the decoded cache is on)."""
        if self._cached and self._decoded is not None:
            yield from self._decoded
            return
        keep = self._decoded is not None
        if keep:
            self._decoded = []
        dec = self.encoder.decode
        for ch, y in self._encoded():
            F = dec(ch.packed, ch.norms, ch.row_scale, self.normalized)
            if keep:
                F.flags.writeable = False  # shared by every later pass
                if y is not None:
                    y.flags.writeable = False
                self._decoded.append((ch.row0, F, y))
            yield ch.row0, F, y
        if keep:
            self._cached = True  # only after a complete pass (an abandoned one refills)

    def load(self) -> None:
        """Fill the cache now (when the budget allows one)."""
        for _ in self._features() if self._decoded is not None else self._encoded():
            pass

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

    @property
    def n_parts(self) -> int:
        """Into how many parts threads may split a pass: the cached chunks (1 before the
        cache is filled, or without a cache)."""
        if not self._cached:
            return 1
        return len(self._decoded if self._decoded is not None else self._cache)

    def _part(self, i: int, k: int) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
        """Every k-th cached chunk from the i-th (a thread's share of a pass)."""
        if self._decoded is not None:
            yield from self._decoded[i::k]
            return
        dec = self.encoder.decode
        for ch, y in self._cache[i::k]:
            yield ch.row0, dec(ch.packed, ch.norms, ch.row_scale, self.normalized), y

    def batches(self, with_ids: bool = False, part: tuple[int, int] | None = None
                ) -> Iterator[Batch]:  # fmt: skip
        """The batches of a pass; ``part=(i, k)``: only every k-th cached chunk from the i-th
        (when :attr:`n_parts` > 1)."""
        items = self._features() if part is None else self._part(*part)
        for r0, F, y in items:
            ids = self.store.ids(r0, r0 + len(F)) if with_ids else {}
            yield Batch(r0, F, y, ids)


class RawData:
    """Passes over raw input (Parquet/CSV/Zarr), encoded on the fly with an encoder: the one
    adapter from raw rows to learner batches, for both engines.

    Batches hold the decoded quantized features (what a model trained on a store sees), or
    with ``raw_features`` the unquantized features (GP regression's statistics).  Rows
    ``start .. stop-1`` only when given (a Dask task's slice of a Parquet input, which it
    reopens by path on the worker: see :meth:`slice`)."""

    def __init__(self, source, sel, encoder: Encoder, *, normalized: bool = False,
                 raw_features: bool = False, chunk_rows: int = 8192, on_nan: str = "error",
                 start: int = 0, stop: int | None = None, path: str | None = None):  # fmt: skip
        self.source, self.sel, self.encoder = source, sel, encoder
        self.normalized, self.raw_features = normalized, raw_features
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
    ) -> RawData:
        """The input at ``path`` with the columns ``encoder`` needs (refused when some are
        missing), its ``label`` column when it has one (required with ``require_label``) and
        whichever of ``ids`` it has."""
        source = open_source(path, fmt)
        path = source.path  # in-memory data: its description
        missing = [c for c in encoder.columns if c not in source.names]
        if missing:
            raise InputError(
                f"{path}: column(s) {', '.join(map(repr, missing[:8]))} the model's map needs "
                f"are missing{unnamed_hint(source)}"
            )
        if label is not None and label not in source.names:
            if require_label:
                raise InputError(f"{path}: label column {label!r} not found")
            label = None
        ids = [i for i in (ids or []) if i in source.names]
        sel = select_columns(source, encoder.columns, label, ids)
        return cls(source, sel, encoder, normalized=normalized, chunk_rows=chunk_rows,
                   on_nan=on_nan)  # fmt: skip

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

    def batches(self, with_ids: bool = True) -> Iterator[Batch]:
        enc = self.encoder
        for ch in self._chunks():
            if self.raw_features:
                F = enc.features(ch.X)
            else:
                e = enc.encode_chunk(ch.X, ch.row0)
                F = enc.decode(e.packed, e.norms, e.row_scale, self.normalized)
            yield Batch(ch.row0, F, ch.label, ch.ids if with_ids else {})


def open_data(
    path: str,
    encoder: Encoder,
    normalized: bool,
    label: str | None,
    ids: list[str] | None = None,
    require_label: bool = False,
    chunk_rows: int = 8192,
):
    """A store encoded with ``encoder`` (checked by fingerprint) or raw data."""
    if location.is_store(path):
        from rfcli.io.store.read import open_group

        attrs = dict(open_group(path).attrs)
        if "rfcli" in attrs:
            store = FeatureStore(path)
            encoder.check_same(store.encoder, what=f"store {path}")
            data = StoreData(store, normalized)
            if require_label and data.label_name is None:
                raise InputError(f"{path}: the store has no label column")
            return data
    if not isinstance(normalized, bool):
        raise ParameterTypeError(f"normalized must be a boolean, got {normalized!r}")
    return RawData.open(
        path, encoder, normalized, label, ids, chunk_rows, require_label=require_label
    )
