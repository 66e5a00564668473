"""Chunked reading of Parquet, CSV (also stdin, ``-``), Zarr and in-memory input: the
format of a path, opening its source (rfcli.io.sources; in-memory tables:
rfcli.io.arrays), choosing columns, and :func:`iter_chunks`, which streams the selected
columns as fixed-size :class:`Chunk` s (float64 features, label, id columns), so memory
is bounded by the chunk size whatever the input size.

:func:`open_source` is the one place where an input becomes a source: every job that
reads input calls it, so every job takes a path, a URL or in-memory data alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rfcli.errors import InputError, ParameterTypeError, UsageError, did_you_mean
from rfcli.io import location
from rfcli.io.arrays import ArraySource, ExtraColumnClash, is_array_input, unnamed_hint
from rfcli.io.columns import count, name_list, not_found
from rfcli.io.settings import (  # noqa: F401 (re-export)
    FORMATS,
    NAN_POLICIES,
    ReadSettings,
    check_delimiter,
    check_on_nan,
)
from rfcli.io.sources import (
    CsvSource,
    ParquetSource,
    Source,
    ZarrSource,
    is_glob,
    text_cell_error,
)


@dataclass
class Chunk:
    row0: int  # global index (in the output) of the first row
    X: np.ndarray  # float64 (n, d)
    label: np.ndarray | None = None
    ids: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.X.shape[0]


#: file names read as CSV (comma- or tab-separated: :func:`rfcli.io.sources.delimiter_for`)
CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".tab", ".tab.gz", ".txt")


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise UsageError(f"unknown input format {fmt!r} (known: {', '.join(FORMATS)})")
        return fmt
    if path == "-":
        return "csv"
    p = path.rstrip("/").lower()
    if location.is_url(path):
        if p.endswith((*CSV_SUFFIXES, ".zarr")):
            raise UsageError(f"{path}: URL inputs are Parquet (a file, a prefix or a glob)")
        return "parquet"
    if p.endswith(".zarr") or os.path.isfile(os.path.join(path, "zarr.json")):
        return "zarr"
    if is_glob(path) or os.path.isdir(path):
        return "parquet"  # a partitioned dataset: a directory or glob of Parquet files
    if p.endswith((".parquet", ".pq")):
        return "parquet"
    if p.endswith(CSV_SUFFIXES):
        return "csv"
    if p.endswith(".zarr") or os.path.isfile(os.path.join(path, "zarr.json")):
        return "zarr"
    from rfcli.io.kinds import DESCRIPTION, kind_of

    kind = kind_of(path)
    if kind in ("model", "npy", "zip", "json", "store"):
        raise InputError(
            f"{path}: is {DESCRIPTION[kind]}, not input data (.parquet, .csv or .zarr rows)"
        )
    raise InputError(
        f"{path}: unknown input format (expected .parquet, .csv or .zarr; or give the format, fmt)"
    )


def open_source(path, fmt: str | None = None, spool_stdin: bool = False,
                delimiter: str | None = None) -> Source:  # fmt: skip
    """The source of an input: a path or URL (Parquet, CSV, ``-`` for stdin, Zarr; ``fmt``
    if the name does not say; ``delimiter``: CSV's field delimiter, by default a tab for
    .tsv/.tab names, else a comma), or in-memory data (a 2-D NumPy array, a pandas
    DataFrame, a pyarrow Table, ...: an :class:`~rfcli.io.arrays.ArraySource`).  A source
    is a context manager (closed at the end of the ``with``)."""
    delimiter = check_delimiter(delimiter)
    if isinstance(path, ArraySource) or is_array_input(path):
        if fmt is not None:
            raise UsageError(f"fmt ({fmt!r}) is the format of a file: in-memory data has none")
        if delimiter is not None:
            raise UsageError("delimiter is for CSV files: in-memory data has none")
        return path if isinstance(path, ArraySource) else ArraySource(path)
    if not location.is_path(path):
        raise ParameterTypeError(
            "the input must be a path or in-memory data (a 2-D NumPy array, a pandas "
            f"DataFrame, a pyarrow Table), got {type(path).__name__}"
        )
    path = location.normalize(path)
    fmt = detect_format(path, fmt)
    if delimiter is not None and fmt != "csv":
        raise UsageError(f"delimiter applies to CSV input, not {fmt} ({path})")
    if location.is_url(path):
        return ParquetSource(path)
    if path != "-" and not os.path.exists(path) and not is_glob(path):
        raise InputError(f"{path}: no such file")
    if path != "-" and os.path.isfile(path) and not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable (permission denied)")
    if fmt == "parquet":
        return ParquetSource(path)
    if fmt == "csv":
        return CsvSource(path, spool=spool_stdin, delimiter=delimiter)
    return ZarrSource(path)


@dataclass
class Selection:
    features: list[str]
    label: str | None = None
    ids: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # non-numeric columns left out by default

    @property
    def all(self) -> list[str]:
        return [*self.features, *([self.label] if self.label else []), *self.ids]


def select_columns(
    source: Source,
    columns: list[str] | None = None,
    label: str | None = None,
    ids: list[str] | None = None,
) -> Selection:
    """Feature columns: ``columns`` if given, else every numeric column except label and ids."""
    ids = list(ids or [])
    where, hint = source.path, unnamed_hint(source) + header_hint(source)
    for name, what in [(label, "label"), *((i, "id") for i in ids)]:
        if name is not None and name not in source.names:
            raise InputError(not_found(where, what, name, source.names, source.numeric, hint))
    reserved = {label, *ids}
    if columns:
        missing = [c for c in columns if c not in source.names]
        if missing:
            mean = did_you_mean(missing[0], source.names)
            raise InputError(
                f"{where}: {_missing(missing)} not found{mean}; its "
                f"{count(len(source.names))}: {name_list(source.names)}{hint}"
            )
        clash = [c for c in columns if c in reserved]
        if clash:
            raise UsageError(f"column(s) {name_list(clash)} cannot be both features and label/id")
        _check_cells(source, columns)
        bad = [c for c in columns if not source.numeric[c]]
        if bad:
            raise InputError(f"{where}: feature column(s) {name_list(bad)} are not numeric")
        features, skipped = list(columns), []
    else:
        rest = [c for c in source.names if c not in reserved]
        _check_cells(source, [c for c in rest if not source.numeric[c]])
        features = [c for c in rest if source.numeric[c]]
        skipped = [c for c in rest if not source.numeric[c]]
    if not features:
        raise InputError(f"{where}: no numeric feature columns selected (choose them with columns)")
    return Selection(features, label, ids, skipped)


def iter_chunks(
    source: Source,
    sel: Selection,
    chunk_rows: int = 8192,
    on_nan: str = "error",
    dtype: type = np.float64,
    order: str = "C",
) -> Iterator[Chunk]:
    """Fixed-size chunks (the last may be shorter) of the selected columns, the features
    as ``dtype`` in the memory ``order`` (:func:`make_chunk`)."""
    check_on_nan(on_nan)
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    names = sel.all
    kw = {"float_columns": sel.features} if isinstance(source, CsvSource) else {}
    line0 = getattr(source, "first_line", None)  # CSV: messages name the file's lines
    pending: list[dict[str, np.ndarray]] = []
    have = 0
    in_row = 0  # rows read from the input
    out_row = 0  # rows emitted
    for batch in source.batches(names, chunk_rows, **kw):
        pending.append(batch)
        have += len(next(iter(batch.values()))) if batch else 0
        while have >= chunk_rows:
            merged = _concat(pending, names)
            head = {n: a[:chunk_rows] for n, a in merged.items()}
            have -= chunk_rows
            pending = [{n: a[chunk_rows:] for n, a in merged.items()}] if have else []
            chunk = make_chunk(head, sel, in_row, out_row, on_nan, source.path, dtype, line0,
                               order)  # fmt: skip
            in_row += chunk_rows
            if len(chunk):
                out_row += len(chunk)
                yield chunk
    if have:
        cols = _concat(pending, names)
        chunk = make_chunk(cols, sel, in_row, out_row, on_nan, source.path, dtype, line0, order)
        if len(chunk):
            yield chunk


def read_range(source, sel: Selection, start: int, stop: int, chunk_rows: int,
               on_nan: str = "error", dtype: type = np.float64) -> Iterator[Chunk]:  # fmt: skip
    """Chunks of the global rows ``start .. stop-1`` of a :class:`ParquetSource` (read by
    row range: a Dask task's slice), with the NaN policy and messages of
    :func:`iter_chunks`."""
    for a in range(start, stop, chunk_rows):
        b = min(a + chunk_rows, stop)
        cols = source.read_rows(sel.all, a, b)
        yield make_chunk(cols, sel, a, a, on_nan, source.path, dtype)


def _concat(parts, names):
    if len(parts) == 1:
        return parts[0]
    return {n: np.concatenate([p[n] for p in parts]) for n in names}


def make_chunk(cols, sel: Selection, in_row: int, out_row: int, on_nan: str, where: str,
               dtype: type = np.float64, line0: int | None = None,
               order: str = "C") -> Chunk:  # fmt: skip
    """The chunk of ``cols``: the feature columns as one (n, d) array of ``dtype``
    (float64, or float32 for an encoder that computes on float32 inputs: each value is
    rounded once, as float64 then float32 would round it), NaN/inf handled by ``on_nan``;
    ``order`` "F" lets columns read one by one stay columns (:func:`_feature_block`).
    Messages name a bad value's row (0-based, ``in_row`` the first's), or with ``line0``
    (the file line of row 0: a CSV input) its line."""
    try:
        X = _feature_block(cols, sel.features, dtype, order)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: feature columns are not numeric ({e})") from None
    finite = np.isfinite(X)
    label = cols[sel.label] if sel.label else None
    ids = {i: cols[i] for i in sel.ids}
    if not finite.all():
        if on_nan == "error":
            r, c = np.argwhere(~finite)[0]
            value = np.asarray(cols[sel.features[c]][r]).item()
            what = f"is {value}"
            if np.isfinite(value):
                what += " (beyond float32's range)"
            elif line0 is not None and np.isnan(value):  # CSV: empty cells, NA, n/a read as NaN
                what = "is missing (an empty cell or NA, n/a, nan)"
            raise InputError(
                f"{where}: {position(in_row + r, line0)}: column {sel.features[c]!r} {what} "
                "(set on_nan to drop or zero)"
            )
        if on_nan == "zero":
            X[~finite] = 0.0
        else:
            keep = finite.all(axis=1)
            X = X[keep]
            label = label[keep] if label is not None else None
            ids = {k: v[keep] for k, v in ids.items()}
    check_label(label, sel.label, in_row, where, line0)
    return Chunk(out_row, X, label, ids)


def position(row: int, line0: int | None = None) -> str:
    """``row 300`` (0-based among the data rows), or ``line 302`` (of a CSV file: ``line0``
    the line of row 0)."""
    return f"row {row}" if line0 is None else f"line {line0 + row}"


def _feature_block(cols, names: list[str], dtype, order: str = "C") -> np.ndarray:
    """The columns ``names`` as one new (n, d) array of ``dtype``.  Columns that are
    consecutive columns of one row-major array (a NumPy array's batches) are copied row by
    row through a 2-D view of them: one pass, where stacking reads each strided column on
    its own (1.4 ms against 0.08 ms for 16,384 x 64 float32); the same values either way.
    Other columns (Parquet's, CSV's) make a row-major array, or with ``order`` "F" a
    column-major one: each column one contiguous copy, where writing the columns into rows
    took the encode's reading thread 0.17 s of 200,000 x 64 float32 (the encoder's workers
    make rows of them: rfcli.encoder.Encoder.encode_chunk).  Its columns lie
    :func:`column_stride` bytes apart, not a multiple of 4 KiB."""
    arrs = [cols[c] for c in names]
    a0 = arrs[0] if arrs else None
    if (
        isinstance(a0, np.ndarray)
        and a0.ndim == 1
        and a0.base is not None
        and all(
            isinstance(a, np.ndarray)
            and a.ndim == 1
            and a.base is a0.base
            and a.dtype == a0.dtype
            and a.shape == a0.shape
            and a.strides == a0.strides
            and a.__array_interface__["data"][0]
            == a0.__array_interface__["data"][0] + j * a0.itemsize
            for j, a in enumerate(arrs)
        )
    ):
        view = np.lib.stride_tricks.as_strided(
            a0, shape=(len(a0), len(arrs)), strides=(a0.strides[0], a0.itemsize), writeable=False
        )
        X = _as_float(view, dtype)
        return X.copy() if np.may_share_memory(X, a0) else X
    if order == "F" and arrs:
        n, size = len(arrs[0]), np.dtype(dtype).itemsize
        buf = np.empty((len(arrs), column_stride(n, size) // size), dtype=dtype)
        for j, a in enumerate(arrs):
            buf[j, :n] = _as_float(a, dtype)
        return buf[:, :n].T
    return np.column_stack([_as_float(a, dtype) for a in arrs])


def column_stride(n: int, itemsize: int) -> int:
    """Bytes between the columns of a column-major chunk of n rows: the least at or above
    ``n x itemsize`` that is 64 more than a multiple of 4,096.  Columns a multiple of 4 KiB
    apart (a power-of-two number of rows) share one set of the CPU's caches, so reading a
    block's rows across them (the encoder's row-major copy of each block) evicted line after
    line: 3.3-3.6 ns a value against 0.6-0.7 ns with the 64 bytes more, for 256-row blocks of
    64 float32 columns of 16,384 or 65,536 rows (AMD EPYC Zen 3, December 2026)."""
    return n * itemsize + (64 - n * itemsize) % 4096


def _as_float(col, dtype) -> np.ndarray:
    """``col`` as ``dtype``; 64-bit integers go through float64 on their way to float32,
    so that a float32 chunk holds exactly the float64 chunk's values rounded."""
    col = np.asarray(col)
    if dtype is not np.float64 and col.dtype.kind in "iu" and col.dtype.itemsize == 8:
        col = col.astype(np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, refused by the caller
        return np.asarray(col, dtype=dtype)


def check_label(label: np.ndarray | None, name: str | None, row0: int, where: str,
                line0: int | None = None) -> None:  # fmt: skip
    """Refuse missing (NaN) values in a float label column (of one or several outputs),
    naming the first such row (``row0``: the global index of the first row given; its
    file line with ``line0``, see :func:`position`)."""
    if label is None or label.dtype.kind != "f":
        return
    finite = np.isfinite(label).reshape(len(label), -1).all(axis=1)
    if not finite.all():
        r = int(np.argmin(finite))
        at = position(row0 + r, line0)
        raise InputError(f"{where}: label column {name!r} is missing/NaN at {at}")


def attach_label(data: Any, y: Any, read: ReadSettings) -> tuple[Any, ReadSettings]:
    """In-memory ``data`` (X) and its label ``y`` (1-D, or 2-D for several regression
    outputs) as one in-memory source whose label column is y, named ``read.label``, else
    the name of the pandas Series y, else ``"label"`` (what a model file records for
    ``evaluate``).  Without y: the input and ``read`` as given."""
    if y is None:
        return data, read
    if not is_array_input(data) or isinstance(data, ArraySource):
        raise UsageError(
            "y is the label of in-memory X (a 2-D NumPy array, a pandas DataFrame, a "
            "pyarrow Table); a file's label is one of its columns (read.label)"
        )
    name = read.label or _series_name(y) or "label"
    try:  # built once: a stream (a RecordBatchReader) can be read only once
        source = ArraySource(data, extra={name: y})
    except ExtraColumnClash as e:
        raise UsageError(
            f"{e.path} has a column {name!r} already, the name of the label y: drop y "
            "to use that column as the label, or name y otherwise (read.label)"
        ) from None
    return source, replace(read, label=name)


def _series_name(y: Any) -> str | None:
    name = getattr(y, "name", None)
    return name if isinstance(name, str) and name else None


def _missing(names: list[str]) -> str:
    """``column 'x'`` or ``3 columns 'x', 'y', 'z'``."""
    if len(names) == 1:
        return f"column {names[0]!r}"
    return f"{count(len(names))} {name_list(names, quote=True)}"


def _check_cells(source: Source, names: list[str]) -> None:
    """Refuse a column of numbers with a cell of text (a CSV column that its first block
    gives as text), naming the line and the text, rather than leave the column out."""
    cells = getattr(source, "bad_cell", None)
    for name in names if cells is not None else ():
        bad = cells(name)
        if bad is not None:
            raise text_cell_error(source.path, bad[0], name, bad[1])


def header_hint(source: Source) -> str:
    """For a message about a missing column: a CSV header that looks split at another
    delimiter (:meth:`~rfcli.io.sources.CsvSource.delimiter_hint`)."""
    hint = getattr(source, "delimiter_hint", None)
    return hint() if hint is not None else ""
