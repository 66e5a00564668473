"""Reading feature stores (:class:`FeatureStore`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from rfcli._version import __version__
from rfcli.encoder import EncodedChunk, Encoder
from rfcli.errors import ConfigError, StoreError, first_line
from rfcli.io import location
from rfcli.io.kinds import not_a_store
from rfcli.io.store.format import (
    ATTR,
    FORMAT,
    FORMAT_VERSION,
    check_meta,
    layout_bits,
    partial_path,
)


def encoder_problems(enc: Encoder, meta: dict, layout: dict) -> list[str]:
    """What does not match between an encoder and the store metadata it was read from:
    the recorded fingerprint, and the layout the encoder's quantizer implies."""
    problems = []
    recorded, actual = meta.get("fingerprint"), enc.fingerprint()
    if actual != recorded:
        problems.append(
            f"encoder fingerprint {actual} does not match the recorded {recorded!r} (encoder "
            "arrays or config were altered)"
        )
    expect = {
        "n_features": enc.n_features,
        "row_bytes": enc.row_bytes,
        "bits": enc.quantizer.bits_per_feature,
        "codes": enc.quantizer.code_layout,
    }
    for k, v in expect.items():
        if layout.get(k) != v:
            problems.append(
                f"bad metadata: layout.{k} is {layout.get(k)!r}, the encoder's is {v!r}"
            )
    return problems


def open_group(path: str):
    """A store's root group: read without zarr-python for a local store
    (:class:`~rfcli.io.store.local_read.LocalGroup`), through it at a URL."""
    if not location.is_url(path):
        from rfcli.io.store.local_read import LocalGroup

        return LocalGroup(path)
    import zarr  # here: the commands that only write stores never import it

    return zarr.open_group(path, mode="r")


class FeatureStore:
    """Read access to a feature store (written by ``rfcli encode``; docs/store-format.md);
    refuses incomplete or unknown-version stores by default.

    Parameters
    ----------
    path : str
        The store (a directory or an object-store URL).
    require_complete : bool, default=True
        Refuse a store whose encode did not finish (False: read the rows it kept, as
        ``rfcli inspect`` does).

    Attributes
    ----------
    path : str
        The normalized path.
    n_rows : int
        Rows in the store (of a partial store: the rows written).
    complete : bool
        Whether its encode finished.
    meta : dict
        The store's metadata (format, layout, encoder config, label, ids, fit report).
    encoder : Encoder
        The encoder its codes come from (checked against its fingerprint).

    Raises
    ------
    StoreError
        No such store, not a feature store, another format version, an incomplete store
        (with ``require_complete``) or inconsistent metadata.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import rfcli
    >>> path = os.path.join(tempfile.mkdtemp(), "s.rff.zarr")
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> _ = rfcli.encode(X, path, rfcli.EncodeSettings(n_features=32, bits=2))
    >>> store = rfcli.FeatureStore(path)
    >>> store.n_rows, store.n_features, store.bits
    (100, 32, 2)
    """

    def __init__(self, path: str, require_complete: bool = True):
        self.path = path = location.normalize(path)
        self.remote = remote = location.is_url(path)
        self._keys: set[str] | None = None
        if not location.isdir(path):
            other = not_a_store(path)
            if other:  # a model file, raw data, ...: not "no such store"
                raise StoreError(other)
            partial = partial_path(path)
            hint = f" (an interrupted encode left {partial})" if os.path.isdir(partial) else ""
            raise StoreError(f"{path}: no such store{hint}")
        if not remote and not os.path.isfile(os.path.join(path, "zarr.json")):
            raise StoreError(not_a_store(path) or f"{path}: not a feature store (no zarr.json)")
        try:
            self.group = open_group(path)
            meta = dict(self.group.attrs).get(ATTR)
        except Exception as e:  # zarr raises many kinds on junk
            raise StoreError(f"{path}: not a readable Zarr store ({first_line(e)})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise StoreError(not_a_store(path) or f"{path}: not an rfcli feature store")
        version = meta.get("format_version")
        if version != FORMAT_VERSION:
            raise StoreError(
                f"{path}: store format version {version!r} is not supported by rfcli {__version__} "
                f"(supports {FORMAT_VERSION})"
            )
        self.meta = meta
        self.complete = bool(meta.get("complete"))
        if require_complete and not self.complete:
            raise StoreError(
                f"{path}: incomplete store (its encode did not finish); encode it again"
            )
        try:
            self.layout = check_meta(meta)
        except ConfigError as e:
            raise StoreError(f"{path}: bad metadata: {e}") from None
        try:
            codes = self.group["codes"]
            shape, chunk0 = tuple(codes.shape), codes.chunks[0]
            codes_rows = shape[0]
        except Exception as e:
            raise StoreError(
                f"{path}: codes array missing or unreadable ({first_line(e)})"
            ) from None
        layout = self.layout
        if shape[1:] != (layout["row_bytes"],):
            raise StoreError(
                f"{path}: bad metadata: layout.row_bytes is {layout['row_bytes']}, the codes "
                f"array has shape {shape}"
            )
        if chunk0 != layout["chunk_rows"]:  # the missing-chunk checks rely on it
            raise StoreError(
                f"{path}: bad metadata: layout.chunk_rows is {layout['chunk_rows']}, the codes "
                f"are chunked by {chunk0} rows"
            )
        self.n_rows = meta["n_rows"] if self.complete else codes_rows
        if self.complete and codes_rows != self.n_rows:
            raise StoreError(
                f"{path}: bad metadata: n_rows is {self.n_rows}, the codes hold {codes_rows} rows"
            )
        self._encoder: Encoder | None = None
        self._require_complete = require_complete
        if require_complete:
            _ = self.encoder  # refused on open if the encoder does not match its fingerprint

    def __reduce__(self):  # pickled by path (Dask moves data slices between workers)
        return FeatureStore, (self.path, self._require_complete)

    @property
    def encoder(self) -> Encoder:
        """The store's encoder, built on first use (every read path goes through it) and
        checked against the recorded fingerprint and layout: a store whose encoder arrays
        or config were altered is refused rather than decoded with the wrong map."""
        if self._encoder is None:
            enc = self.unchecked_encoder()
            problems = encoder_problems(enc, self.meta, self.layout)
            if problems:
                raise StoreError(f"{self.path}: {problems[0]} (the store is damaged)")
            self._encoder = enc
        return self._encoder

    def unchecked_encoder(self) -> Encoder:
        """The encoder rebuilt from the metadata and arrays, without the checks of
        :attr:`encoder` (``rfcli inspect --verify`` lists what is wrong instead).

        Returns
        -------
        Encoder
            The encoder the metadata describes.

        Raises
        ------
        StoreError
            An encoder array missing, or bad encoder metadata.
        """
        arrays = {}
        for key in self.meta.get("encoder_arrays", []):
            try:
                arrays[key] = self.group[f"encoder/{key}"][...]
            except KeyError:
                raise StoreError(f"{self.path}: encoder array {key!r} is missing") from None
        try:
            return Encoder.from_state(self.meta["encoder"], arrays)
        except ConfigError as e:
            raise StoreError(f"{self.path}: bad metadata: {e}") from None
        except KeyError:
            raise StoreError(f"{self.path}: metadata has no encoder") from None

    @property
    def n_features(self) -> int:
        """Features per row (m)."""
        return int(self.layout["n_features"])

    @property
    def bits(self) -> float:
        """Bits per feature (an integer, or 1.6 for trit-packed ternary codes)."""
        return layout_bits(self.layout)

    @property
    def label_info(self) -> dict | None:
        """The label's metadata (``name``, ``kind``, ``classes`` of a category label), or
        None for a store without a label."""
        return self.meta.get("label")

    @property
    def chunk_rows(self) -> int:
        """Rows per store chunk."""
        return int(self.layout.get("chunk_rows", 8192))

    def iter_encoded(
        self, chunk_rows: int | None = None, start: int = 0, stop: int | None = None
    ) -> Iterator[EncodedChunk]:
        """The store's rows as they are kept (packed codes, norms, row scales), chunk by
        chunk.

        Parameters
        ----------
        chunk_rows : int or None, default=None
            Rows per chunk yielded (None: the store's chunks).
        start : int, default=0
            The first row.
        stop : int or None, default=None
            The row after the last (None: the store's end).

        Yields
        ------
        EncodedChunk
            The rows ``row0 .. row0 + len(packed)``.

        Raises
        ------
        StoreError
            A missing or damaged chunk, or an altered encoder.
        """
        _ = self.encoder  # the fingerprint check: no codes are served for an altered encoder
        step = chunk_rows or self.chunk_rows
        stop = self.n_rows if stop is None else min(stop, self.n_rows)
        codes, norms = self.group["codes"], self.group["norms"]
        scale = self.group["row_scale"] if "row_scale" in self.group else None
        for r0 in range(start, stop, step):
            r1 = min(r0 + step, stop)
            self._check_chunk_files(r0, r1)
            try:
                yield EncodedChunk(
                    r0, codes[r0:r1], norms[r0:r1], scale[r0:r1] if scale is not None else None
                )
            except Exception as e:
                if isinstance(e, StoreError):
                    raise
                why = first_line(e)
                if "checksum" in why.lower():
                    why = "checksum mismatch: the store is damaged"
                raise StoreError(
                    f"{self.path}: cannot read rows {r0}..{r1 - 1} ({why}; "
                    "`rfcli inspect --verify` lists the damage)"
                ) from None

    def _check_chunk_files(self, r0: int, r1: int) -> None:
        """Zarr reads a missing chunk as zeros: refuse instead (local stores)."""
        cr = self.chunk_rows
        for i in range(r0 // cr, (r1 - 1) // cr + 1):
            for name, key in (("codes", (str(i), "0")), ("norms", (str(i),))):
                if not self.has_file(name, "c", *key):
                    last = min((i + 1) * cr, self.n_rows) - 1
                    raise StoreError(
                        f"{self.path}: {name} chunk {i} (rows {i * cr}..{last}) is missing: the "
                        "store is damaged (`rfcli inspect --verify` lists the damage)"
                    )

    def has_file(self, *parts: str) -> bool:
        """Whether the file (object) at ``parts`` under the store exists: one request per
        object at a URL, unless :meth:`list_files` listed the whole store first.

        Parameters
        ----------
        *parts : str
            The file's path under the store, one part per argument.

        Returns
        -------
        bool
            Whether it exists.
        """
        if not self.remote:
            return os.path.isfile(os.path.join(self.path, *parts))
        key = "/".join(parts)
        if self._keys is not None:
            return key in self._keys
        return location.exists(location.join(self.path, key))

    def list_files(self) -> None:
        """List a URL store's objects once (before checking many of them: verify)."""
        if self.remote:
            fs, p = location.filesystem(self.path)
            root = fs._strip_protocol(p).rstrip("/") + "/"
            self._keys = {q[len(root) :] for q in fs.find(root)}

    def iter_features(
        self, normalized: bool = False, chunk_rows: int | None = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """The store's decoded features, chunk by chunk (``F(x).F(y)`` estimates the kernel).

        Parameters
        ----------
        normalized : bool, default=False
            Unit rows ``Q(z)/||Q(z)||`` (the normalized estimator).
        chunk_rows : int or None, default=None
            Rows per chunk (None: the store's chunks).

        Yields
        ------
        row0 : int
            The chunk's first row.
        features : ndarray of shape (rows, n_features), float32
            Its features.
        """
        enc = self.encoder
        for ch in self.iter_encoded(chunk_rows):
            yield ch.row0, enc.decode(ch.packed, ch.norms, ch.row_scale, normalized=normalized)

    def labels(self, start: int = 0, stop: int | None = None) -> np.ndarray | None:
        """The label as stored: class codes for a category label, else the numbers.

        Parameters
        ----------
        start : int, default=0
            The first row.
        stop : int or None, default=None
            The row after the last (None: the store's end).

        Returns
        -------
        ndarray or None
            The rows' labels; None for a store without a label.
        """
        if self.label_info is None:
            return None
        return self._array("label")[start:stop]

    def _array(self, name: str):
        """An array the metadata lists: a damaged store if it is missing."""
        try:
            return self.group[name]
        except KeyError:
            raise StoreError(
                f"{self.path}: the metadata lists a {name} array but the store has none: the "
                "store is damaged (`rfcli inspect --verify` lists the damage)"
            ) from None

    def label_values(self, start: int = 0, stop: int | None = None) -> np.ndarray | None:
        """Labels as in the input: class text for category labels, else the numbers.

        Parameters
        ----------
        start : int, default=0
            The first row.
        stop : int or None, default=None
            The row after the last (None: the store's end).

        Returns
        -------
        ndarray or None
            The rows' labels; None for a store without a label.

        Raises
        ------
        StoreError
            Class codes outside the classes (a damaged store).
        """
        lab = self.labels(start, stop)
        classes = (self.label_info or {}).get("classes")
        if lab is None or classes is None:
            return lab
        if lab.size and (lab.min() < 0 or lab.max() >= len(classes)):
            raise StoreError(
                f"{self.path}: label class codes outside 0..{len(classes) - 1}: the store is "
                "damaged (`rfcli inspect --verify` lists the damage)"
            )
        return np.asarray(classes, dtype=object)[lab]

    def ids(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """The id columns carried with the rows.

        Parameters
        ----------
        start : int, default=0
            The first row.
        stop : int or None, default=None
            The row after the last (None: the store's end).

        Returns
        -------
        dict of str to ndarray
            Each id column's values.
        """
        return {k: self._array(f"ids/{k}")[start:stop] for k in self.meta.get("ids", [])}

    def nbytes_on_disk(self) -> int:
        """The store's size on disk (every file, metadata included).

        Returns
        -------
        int
            Bytes.
        """
        if self.remote:
            fs, p = location.filesystem(self.path)
            return int(fs.du(p))
        total = 0
        for root, _, files in os.walk(self.path):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        return total

    def _file_sizes(self) -> dict[str, int]:
        """Every file of the store by its path relative to the store (``/``-separated)."""
        if self.remote:
            fs, p = location.filesystem(self.path)
            root = p.rstrip("/") + "/"
            found = fs.find(p, detail=True).items()
            return {k[len(root) :]: int(v.get("size") or 0) for k, v in found if k.startswith(root)}
        out = {}
        for r, _, files in os.walk(self.path):
            for f in files:
                full = os.path.join(r, f)
                rel = os.path.relpath(full, self.path).replace(os.sep, "/")
                out[rel] = os.path.getsize(full)
        return out

    def nbytes_by_part(self) -> dict[str, int]:
        """The bytes on disk by what they hold, largest first: each row array's chunks
        (``codes``, ``norms``, ``row_scale``, ``label``, ``ids``), the encoder's arrays
        (``encoder``) and every node's ``zarr.json`` (``metadata``).

        Returns
        -------
        dict of str to int
            Bytes by part.
        """
        parts: dict[str, int] = {}
        for rel, size in self._file_sizes().items():
            part = "metadata" if rel.rsplit("/", 1)[-1] == "zarr.json" else rel.split("/", 1)[0]
            parts[part] = parts.get(part, 0) + size
        return dict(sorted(parts.items(), key=lambda kv: (-kv[1], kv[0])))

    def codes_nbytes_on_disk(self) -> int:
        """The size on disk of the packed codes alone (what the compression ratio counts).

        Returns
        -------
        int
            Bytes.
        """
        if self.remote:
            fs, p = location.filesystem(location.join(self.path, "codes"))
            return int(fs.du(p))
        p = os.path.join(self.path, "codes")
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(p) for f in fs)
