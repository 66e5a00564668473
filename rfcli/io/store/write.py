"""Writing feature stores: the sequential :class:`StoreWriter` (chunk by chunk, with
resume checkpoints) and the :class:`RegionWriter` of the Dask engine's tasks.  The layout
is described in :mod:`rfcli.io.store` (the reader) and docs/store-format.md."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import numpy as np

from rfcli._version import __version__
from rfcli.encoder import EncodedChunk, Encoder
from rfcli.errors import OutputError, StoreError, UsageError, check_int, first_line
from rfcli.io import location
from rfcli.io.atomic import replace_tree
from rfcli.io.store.chunks import SAMPLE_ROWS, zstd_pays
from rfcli.io.store.format import (
    ATTR,
    FORMAT,
    FORMAT_VERSION,
    fitted_chunk_rows,
    label_kind,
    layout,
    partial_path,
    store_chunk_rows,
)
from rfcli.io.store.nodes import open_nodes, write_small


def prepare_output(path: str, overwrite: bool) -> None:
    if location.exists(path) and not overwrite:
        raise OutputError(f"{path}: already exists (set overwrite to replace it)")
    if location.is_url(path):
        return  # object stores have no directories to check
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: directory {parent} is not writable")


def _remove_chunks_from(array_dir: str, first: int) -> None:
    """Delete the chunk files of row-chunks >= ``first`` (zarr's resize keeps them)."""
    root = os.path.join(array_dir, "c")
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if name.isdigit() and int(name) >= first:
            p = os.path.join(root, name)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)


#: zarr writes a file as ``<name>.<uuid hex>.partial`` and renames it into place
_ZARR_TEMP = re.compile(r"\.[0-9a-f]{32}\.partial$")


def _remove_zarr_temp_files(root: str) -> None:
    """Delete the temporary files of zarr writes that a kill interrupted."""
    for r, _, files in os.walk(root):
        for f in files:
            if _ZARR_TEMP.search(f):
                os.remove(os.path.join(r, f))


def _write_rows(arr, start: int, data: np.ndarray, chunk_rows: int):
    """Rows ``start ..`` of ``arr`` (:mod:`rfcli.io.store.nodes`): chunk files written
    directly when it has them and the rows start a chunk (they then fill whole chunks, or
    end the array), else through zarr."""
    if arr.files is None or start % chunk_rows:
        arr.write_rows(start, data)
        return
    for r in range(0, len(data), chunk_rows):
        arr.files.write((start + r) // chunk_rows, data[r : r + chunk_rows])


def _row_arrays(ids) -> list[str]:
    """The store's per-row arrays that may exist (docs/store-format.md)."""
    return ["codes", "norms", "row_scale", "label", *(f"ids/{k}" for k in ids)]


def _id_column(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An id column's values as stored in an array of ``dtype`` (text stays text)."""
    if values.dtype == object or dtype.kind not in "iuf":
        return np.asarray([str(v) for v in values], dtype=str)
    return values.astype(np.float64 if dtype.kind == "f" else dtype)


class StoreWriter:
    """Append encoded chunks in order; :meth:`close` marks the store complete.

    Checkpoints: after every flushed store chunk the metadata records ``rows_committed``
    (and the label classes seen so far), so an interrupted encode can be continued with
    :meth:`resume`; these resume fields are dropped when the store completes, so a resumed
    store is byte-identical to an uninterrupted one.  A local store is written to
    ``PATH.partial`` and renamed when complete.

    Parameters
    ----------
    path : str
        The store to write (a directory or an object-store URL).
    encoder : Encoder
        The encoder of the codes written (stored with them).
    label : str or None, default=None
        The label column's name (its values come with each :meth:`write`).
    ids : list of str or None, default=None
        Id columns carried with the rows.
    source : dict or None, default=None
        What the store was encoded from (recorded in the metadata).
    overwrite : bool, default=False
        Replace an existing store.
    resume_key : str or None, default=None
        The settings' key a later :meth:`resume` must match.
    chunk_rows : int or None, default=None
        Rows per store chunk (None: from the row size, :func:`rfcli.io.store.
        store_chunk_rows`).
    fit : dict or None, default=None
        The encoder's fit report, recorded in the metadata.

    Attributes
    ----------
    n_rows : int
        Rows flushed to store chunks so far (:attr:`rows_written` adds the buffered ones).
    tmp : str
        Where the store is being written.

    Raises
    ------
    OutputError
        ``path`` exists (without ``overwrite``) or cannot be written.
    """

    def __init__(
        self,
        path: str,
        encoder: Encoder,
        *,
        label: str | None = None,
        ids: list[str] | None = None,
        source: dict[str, Any] | None = None,
        overwrite: bool = False,
        resume_key: str | None = None,
        chunk_rows: int | None = None,
        fit: dict | None = None,
    ):
        prepare_output(path, overwrite)
        self.path = path = location.normalize(path)
        # object storage has no rename: a URL store is written in place (the replaced store
        # is deleted first) and becomes complete when the completion marker is written
        self.remote = location.is_url(path)
        self.tmp = path if self.remote else partial_path(path)
        location.remove_tree(self.tmp)
        self.encoder = encoder
        if chunk_rows is not None:
            check_int(chunk_rows, "store_chunk_rows", 1)
        self.chunk_rows = int(chunk_rows or store_chunk_rows(encoder.row_bytes))
        self.label_name = label
        self.id_names = list(ids or [])
        self.classes: list | None = None
        self._class_index: dict = {}
        self.n_rows = 0
        self._buf: list[tuple[EncodedChunk, np.ndarray | None, dict]] = []
        self._buf_rows = 0
        self._arrays: dict[str, Any] = {}  # LocalArray or ZarrArray (rfcli.io.store.nodes)
        self._specs: dict[str, tuple[tuple, Any]] = {}  # arrays created at their first write
        try:
            self.nodes = open_nodes(self.tmp, self.remote)
            config, arrays = encoder.to_state()
            for key, arr in arrays.items():
                write_small(self.nodes, f"encoder/{key}", arr)
        except OSError as e:
            raise OutputError(f"{self.tmp}: cannot create ({e})") from None
        rb = encoder.row_bytes
        self._new("codes", (rb,), np.uint8, chunk_cols=rb)
        self._new("norms", (), np.float32)
        if encoder.fmap.uses_row_scale:
            self._new("row_scale", (), np.float32)
        self.meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "rfcli_version": __version__,
            "encoder": config,
            "encoder_arrays": sorted(arrays),
            "fingerprint": encoder.fingerprint(),
            "layout": layout(encoder, self.chunk_rows),
            "label": None,
            "ids": self.id_names,
            "source": source or {},
            "fit": fit or {},
            "n_rows": 0,
            "complete": False,
            "rows_committed": 0,
            "resume_key": resume_key,
        }
        self.nodes.set_attrs(ATTR, self.meta)

    @classmethod
    def resume(cls, path: str, resume_key: str, overwrite: bool = False) -> StoreWriter | None:
        """Reopen the partial store of an interrupted encode of ``path``: its arrays are cut
        back to the last checkpoint and writing continues from there.  ``resume_key`` must
        match the one the encode started with (same input and settings).

        Parameters
        ----------
        path : str
            The store the interrupted encode was writing (its partial store is
            ``PATH.partial``).
        resume_key : str
            The key of the input and settings (the same as the interrupted encode's).
        overwrite : bool, default=False
            Whether the finished store may replace an existing one.

        Returns
        -------
        StoreWriter or None
            The writer, continuing after the last checkpoint (its :attr:`n_rows` rows
            kept); None when the partial store has no checkpoint yet (start over).

        Raises
        ------
        StoreError
            No readable partial rfcli store.
        UsageError
            A partial store started with another input or other settings.
        """
        prepare_output(path, overwrite)
        tmp = partial_path(path)
        try:
            nodes = open_nodes(tmp, remote=False, create=False)
            meta = nodes.attrs()[ATTR]
        except Exception as e:
            raise StoreError(f"{tmp}: cannot resume from it ({first_line(e)})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise StoreError(f"{tmp}: not a partial rfcli store")
        if meta.get("resume_key") != resume_key:
            raise UsageError(
                f"{tmp} was started with another input or other settings; run the same "
                "encode as the interrupted one, or encode without resume to start over"
            )
        if not meta.get("rows_committed"):
            return None
        _remove_zarr_temp_files(tmp)  # writes a kill cut short (never part of the store)
        from rfcli.io.store.read import FeatureStore

        self = cls.__new__(cls)
        self.path, self.tmp, self.nodes, self.meta = path, tmp, nodes, meta
        self.remote = False
        self.encoder = FeatureStore(tmp, require_complete=False).encoder
        self.chunk_rows = int(meta["layout"]["chunk_rows"])
        label = meta.get("label")
        self.label_name = label["name"] if label else None
        self.id_names = list(meta.get("ids", []))
        partial_classes = (label or {}).get("classes_partial")
        self.classes = None if partial_classes is None else list(partial_classes)
        self._class_index = {c: i for i, c in enumerate(self.classes or [])}
        self.n_rows = int(meta.get("rows_committed", 0))
        self._buf, self._buf_rows = [], 0
        self._arrays, self._specs = {}, {}
        for name in _row_arrays(self.id_names):
            arr = nodes.open(name)
            if arr is not None:
                arr.resize(self.n_rows, final=False)  # drop rows after the checkpoint
                _remove_chunks_from(os.path.join(tmp, name), self.n_rows // self.chunk_rows)
                self._arrays[name] = arr
        return self

    def _new(self, name, tail_shape, dtype, chunk_cols=None):
        """Declare an array; it is created at its first write, when a sample of its values
        decides its compression (:func:`rfcli.io.store.chunks.zstd_pays`)."""
        self._specs[name] = (tuple(tail_shape), dtype)

    def _fit_chunks(self, n_rows: int) -> None:
        """Chunks of at most ``n_rows`` rows, the store's (known before its first chunk is
        written: a store smaller than one chunk, or the Dask engine's preallocation)."""
        assert not self._arrays, "chunking fixed after the first array"
        self.chunk_rows = fitted_chunk_rows(self.chunk_rows, n_rows)
        self.meta["layout"]["chunk_rows"] = self.chunk_rows

    def _dtype(self, name: str) -> np.dtype:
        if name in self._arrays:
            return self._arrays[name].dtype
        return np.dtype(self._specs[name][1])

    def _array(self, name: str, sample: np.ndarray | None, n_rows: int):
        """The array ``name`` (created now with ``n_rows`` rows if it is new)."""
        if name not in self._arrays:
            tail, dtype = self._specs.pop(name)
            zstd = zstd_pays(None if dtype is str else sample)
            self._arrays[name] = self.nodes.create(
                name, (n_rows, *tail), (self.chunk_rows, *tail), dtype, zstd
            )
        return self._arrays[name]

    # -- labels and ids ------------------------------------------------------------------
    def _label_values(self, label: np.ndarray) -> np.ndarray:
        if "label" not in self._arrays and self.meta["label"] is None:
            kind = label_kind(label)
            dtype = {"category": np.int32, "int": np.int64, "float": np.float64}[kind]
            if kind == "category":
                self.classes = []
            if "label" not in self._specs:
                self._new("label", (), dtype)
            self.meta["label"] = {"name": self.label_name, "kind": kind}
        if self.classes is not None:
            out = np.empty(len(label), dtype=np.int32)
            for i, v in enumerate(label):
                code = self._class_index.get(v)
                if code is None:
                    code = self._class_index[v] = len(self.classes)
                    self.classes.append(v)
                out[i] = code
            return out
        return label.astype(self._dtype("label"))

    def _id_values(self, name: str, values: np.ndarray) -> np.ndarray:
        key = f"ids/{name}"
        if key not in self._arrays and key not in self._specs:
            self._new(key, (), str if values.dtype == object else values.dtype)
        return _id_column(values, self._dtype(key))

    # -- writing -------------------------------------------------------------------------
    def write(
        self, enc: EncodedChunk, label: np.ndarray | None = None, ids: dict | None = None
    ) -> None:
        """Append ``enc``'s rows.  The rows that wait for the next store chunk are kept as
        they are (:attr:`buffered_rows`): while there are any, ``enc``'s arrays are the
        writer's; else the caller may reuse them.

        Parameters
        ----------
        enc : EncodedChunk
            The next rows (``enc.row0`` must be :attr:`rows_written`).
        label : ndarray of shape (n,) or None, default=None
            Their labels.
        ids : dict of str to ndarray or None, default=None
            Their id columns.

        Raises
        ------
        RuntimeError
            Rows out of order.
        """
        if enc.row0 != self.n_rows + self._buf_rows:
            raise RuntimeError(f"chunk starting at row {enc.row0} written out of order")
        lab = self._label_values(label) if label is not None and self.label_name else None
        idv = {k: self._id_values(k, v) for k, v in (ids or {}).items()}
        self._buf.append((enc, lab, idv))
        self._buf_rows += enc.packed.shape[0]
        while self._buf_rows >= self.chunk_rows:
            self._flush(self.chunk_rows)

    def _flush(self, rows: int) -> None:
        def cat(get):  # one buffered chunk (the usual case): its arrays, not a copy
            parts = [get(b) for b in self._buf]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        cols: dict[str, np.ndarray] = {
            "codes": cat(lambda b: b[0].packed),
            "norms": cat(lambda b: b[0].norms),
        }
        if self._buf[0][0].row_scale is not None:
            cols["row_scale"] = cat(lambda b: b[0].row_scale)
        if self._buf[0][1] is not None:
            cols["label"] = cat(lambda b: b[1])
        for k in self.id_names:
            cols[f"ids/{k}"] = cat(lambda b, k=k: b[2][k])
        start, stop = self.n_rows, self.n_rows + rows
        rest = []
        for name, data in cols.items():
            arr = self._array(name, data[:SAMPLE_ROWS], stop)  # the store's first rows
            _write_rows(arr, start, data[:rows], self.chunk_rows)
        total = cols["codes"].shape[0]
        if total > rows:
            tail = EncodedChunk(
                stop,
                cols["codes"][rows:],
                cols["norms"][rows:],
                cols["row_scale"][rows:] if "row_scale" in cols else None,
            )
            rest = [
                (
                    tail,
                    cols["label"][rows:] if "label" in cols else None,
                    {k: cols[f"ids/{k}"][rows:] for k in self.id_names},
                )
            ]
        self._buf = rest
        self._buf_rows = total - rows
        self.n_rows = stop
        self._checkpoint()

    def _checkpoint(self) -> None:
        """``rows_committed``, the rows a resume keeps (their chunks are written): a small,
        compact rewrite of the group's ``zarr.json``.  The arrays' shapes are brought to
        their rows by :meth:`close`, and by :meth:`resume`, which drops the rows after the
        checkpoint."""
        self.meta["rows_committed"] = self.n_rows
        if self.meta["label"] is not None and self.classes is not None:
            self.meta["label"]["classes_partial"] = [str(c) for c in self.classes]
        self.nodes.set_attrs(ATTR, self.meta, final=False)

    @property
    def rows_written(self) -> int:
        """Rows given to :meth:`write` so far (flushed or buffered)."""
        return self.n_rows + self._buf_rows

    @property
    def buffered_rows(self) -> int:
        """Rows written but not yet in a store chunk (held as the caller gave them)."""
        return self._buf_rows

    # -- parallel writing (the Dask engine) ----------------------------------------------
    def preallocate(self, n_rows: int, first, classes: list | None) -> None:
        """Size every array for ``n_rows`` rows so that tasks can fill disjoint, chunk-aligned
        row ranges with :class:`RegionWriter`.  ``first`` is the input's first chunk (it
        decides label and id dtypes, as in the sequential writer); ``classes`` the category
        label's classes in order of first appearance over the whole input.

        Parameters
        ----------
        n_rows : int
            The store's rows.
        first : Chunk
            The input's first chunk.
        classes : list or None
            The category label's classes (None: no category label).
        """
        self._fit_chunks(n_rows)
        if first.label is not None and self.label_name:
            self._label_values(first.label[:0])
            if self.classes is not None:
                self.classes = list(classes or [])
                self._class_index = {c: i for i, c in enumerate(self.classes)}
        # ``first`` holds the first SAMPLE_ROWS rows: their values decide each array's
        # compression, as in the sequential writer
        enc = self.encoder.encode_chunk(first.X, first.row0)
        samples = {"codes": enc.packed, "norms": enc.norms, "row_scale": enc.row_scale}
        if first.label is not None and self.label_name:
            samples["label"] = self._label_values(first.label)
        for k, v in (first.ids or {}).items():
            samples[f"ids/{k}"] = self._id_values(k, v)
        for name in list(self._specs):
            self._array(name, samples.get(name), n_rows)
        self.n_rows = 0
        self._checkpoint()  # records the label kind and classes for the tasks

    def finish_parallel(self, n_rows: int) -> str:
        """Complete a store whose rows were all written by RegionWriters.

        Parameters
        ----------
        n_rows : int
            The rows written.

        Returns
        -------
        str
            The store's path (:meth:`close`).
        """
        self.n_rows = n_rows
        self._buf, self._buf_rows = [], 0
        return self.close()

    def close(self) -> str:
        """Flush, write the completion marker last, and move the store into place.

        Returns
        -------
        str
            The store's path.

        Raises
        ------
        StoreError
            No rows were written.
        OutputError
            The store cannot be moved into place (a store there is left unchanged).
        """
        if self._buf_rows and not self.n_rows and not self._arrays:  # its rows are all here
            self._fit_chunks(self._buf_rows)
        if self._buf_rows:
            self._flush(self._buf_rows)
        if self.n_rows == 0:
            self.abort()
            raise StoreError(f"{self.path}: no rows to write (empty input)")
        if self.meta["label"] is not None and self.classes is not None:
            self.meta["label"].pop("classes_partial", None)
            self.meta["label"]["classes"] = [str(c) for c in self.classes]
        self.meta.pop("rows_committed", None)
        self.meta.pop("resume_key", None)
        self.meta["n_rows"] = self.n_rows
        self.meta["complete"] = True
        for arr in self._arrays.values():  # each array's final metadata
            arr.resize(self.n_rows)
        self.nodes.set_attrs(ATTR, self.meta)
        if self.remote:
            return self.path
        try:
            replace_tree(self.tmp, self.path)  # completes, or leaves a replaced store as it was
        except OSError as e:
            kept = "; the store there is unchanged" if os.path.lexists(self.path) else ""
            msg = f"{self.path}: cannot move the store into place ({e}){kept}"
            raise OutputError(msg) from None
        return self.path

    def abort(self) -> None:
        """Remove the store being written (nothing is left at ``PATH.partial``)."""
        location.remove_tree(self.tmp)


class RegionWriter:
    """Writes encoded rows at their global row positions into a preallocated partial store;
    one per Dask task, each owning whole store chunks (no two tasks touch one chunk).

    Rows are buffered and written a whole store chunk at a time: a write covering part of
    a chunk makes Zarr read, decompress, modify and recompress the chunk, so writing one
    32k-row chunk in 8k-row pieces costs about four times the work.  :meth:`close` writes
    the rest (the store's last, partial chunk)."""

    def __init__(self, tmp: str):
        self.nodes = open_nodes(tmp, location.is_url(tmp), create=False)
        meta = self.nodes.attrs()[ATTR]
        label = meta.get("label") or {}
        self.chunk_rows = int(meta["layout"]["chunk_rows"])
        self.category = label.get("kind") == "category"
        self.class_index = {c: i for i, c in enumerate(label.get("classes_partial", []))}
        names = _row_arrays(meta.get("ids", []))
        self.arrays = {k: a for k in names if (a := self.nodes.open(k)) is not None}
        self._buf: dict[str, list[np.ndarray]] = {}
        self._row0: int | None = None
        self._rows = 0

    def _columns(self, enc: EncodedChunk, label, ids) -> dict[str, np.ndarray]:
        cols = {"codes": enc.packed, "norms": enc.norms}
        if enc.row_scale is not None:
            cols["row_scale"] = enc.row_scale
        if label is not None and "label" in self.arrays:
            if self.category:
                try:
                    cols["label"] = np.array(
                        [self.class_index[str(v)] for v in label], dtype=np.int32
                    )
                except KeyError as e:
                    raise StoreError(f"label {e.args[0]!r} was not seen when fitting") from None
            else:
                cols["label"] = label.astype(self.arrays["label"].dtype)
        for k, v in (ids or {}).items():
            cols[f"ids/{k}"] = _id_column(v, self.arrays[f"ids/{k}"].dtype)
        return cols

    def write(self, enc: EncodedChunk, label: np.ndarray | None, ids: dict) -> None:
        if self._row0 is None:
            self._row0 = enc.row0
        elif enc.row0 != self._row0 + self._rows:
            raise RuntimeError(f"rows starting at {enc.row0} written out of order")
        for k, v in self._columns(enc, label, ids).items():
            self._buf.setdefault(k, []).append(v)
        self._rows += enc.packed.shape[0]
        whole = self._rows // self.chunk_rows * self.chunk_rows
        if whole:
            self._flush(whole)

    def _flush(self, rows: int) -> None:
        r0 = self._row0
        for k, parts in self._buf.items():
            data = np.concatenate(parts) if len(parts) > 1 else parts[0]
            _write_rows(self.arrays[k], r0, data[:rows], self.chunk_rows)
            self._buf[k] = [data[rows:]] if rows < len(data) else []
        self._row0, self._rows = r0 + rows, self._rows - rows

    def close(self) -> None:
        """Write the buffered rest."""
        if self._rows:
            self._flush(self._rows)
