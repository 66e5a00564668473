"""Input sources: one Parquet file or a partitioned dataset (directory, glob, URL prefix;
row-range reads for the Dask engine), CSV (a file or stdin) and Zarr columns.  A source
knows its column names and which are numeric, and yields batches of columns;
:mod:`rfcli.io.readers` turns them into fixed-size chunks of features."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from rfcli.errors import InputError, first_line
from rfcli.io import location
from rfcli.io.kinds import MAGIC, sniff


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


class Source:
    """Base class: a table read in batches."""

    path: str
    names: list[str]
    numeric: dict[str, bool]
    num_rows: int | None = None
    rereadable: bool = True

    def batches(self, names: list[str], batch_rows: int) -> Iterator[dict[str, np.ndarray]]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _is_parquet_name(name: str) -> bool:
    """A data file of a partitioned dataset (not a hidden or _metadata-like file)."""
    return name.lower().endswith((".parquet", ".pq")) and not name.startswith((".", "_"))


def parquet_files(path: str) -> list[str]:
    """The files of a Parquet input: the file itself, every ``*.parquet``/``*.pq`` file under
    a directory (recursively, e.g. Hive partitions ``key=value/``), or a glob's matches;
    sorted by path, which fixes the row order."""
    if location.is_url(path):
        if location.isfile(path):
            return [path]
        files = [f for f in location.list_files(path) if _is_parquet_name(f.rsplit("/", 1)[-1])]
        if not files:
            raise InputError(f"{path}: no Parquet files found")
        return files
    if is_glob(path):
        import glob

        files = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
    elif os.path.isdir(path):
        files = sorted(
            os.path.join(root, f)
            for root, _, names in os.walk(path)
            for f in names
            if _is_parquet_name(f)
        )
    else:
        return [path]
    if not files:
        raise InputError(f"{path}: no Parquet files found")
    return files


#: bytes read at a time from each column of a row group (a buffer per column: 64 KiB keeps
#: a wide file's buffers small; 1 MiB cost 15 MB more for 64 columns and read no faster)
READ_BUFFER = 1 << 16


class ParquetSource(Source):
    """One Parquet file, or a partitioned dataset (directory or glob of files with the same
    schema) read file after file in path order.  ``row_groups`` lists every row group with
    its global first row, so a task can read any row range alone (the Dask engine)."""

    def __init__(self, path: str):
        self.path = path
        self.files = parquet_files(path)
        self._open: dict[str, pq.ParquetFile] = {}
        #: the row groups read last, one per column set (features, or the label alone:
        #: training on raw input reads both for each chunk), so consecutive row ranges in
        #: a group decode it once
        self._groups: dict[tuple, pa.Table] = {}
        first = self._file(self.files[0])
        schema = first.schema_arrow
        self.names = list(schema.names)
        self.numeric = {f.name: _is_numeric(f.type) for f in schema}
        self.row_groups: list[tuple[str, int, int, int]] = []  # (file, group, row0, rows)
        row = 0
        for f in self.files:
            pf = self._file(f)
            if f != self.files[0] and not pf.schema_arrow.equals(schema):
                raise InputError(
                    f"{f}: its columns/types differ from {self.files[0]}'s (a partitioned "
                    "dataset needs one schema)"
                )
            md = pf.metadata
            for g in range(md.num_row_groups):
                n = md.row_group(g).num_rows
                self.row_groups.append((f, g, row, n))
                row += n
        self.num_rows = row

    def _file(self, f: str) -> pq.ParquetFile:
        if f not in self._open:
            try:
                # pre_buffer caches every row group's column chunks until the iteration ends
                # (memory growing with the file); read row group by row group instead, each
                # column through a buffer of READ_BUFFER bytes
                src = f
                if location.is_url(f):
                    fs, p = location.filesystem(f)
                    src = fs.open(p, "rb")
                self._open[f] = pq.ParquetFile(src, pre_buffer=False, buffer_size=READ_BUFFER)
            except FileNotFoundError:
                raise InputError(f"{f}: no such file") from None
            except (pa.ArrowException, OSError) as e:
                raise InputError(f"{f}: cannot read as Parquet ({first_line(e)})") from None
            if len(self._open) > 64:  # bound open handles on datasets of many files
                self._open.pop(next(iter(self._open)))
        return self._open[f]

    def batches(self, names, batch_rows):
        for f in self.files:
            try:
                # decoded on the calling thread: the chunk loop overlaps reading with the
                # workers' encoding, and pyarrow's own thread pool would only add threads
                # beyond the cores rfcli was given (measured: docs/cli.md, "What the
                # encode's implementation choices cost")
                it = self._file(f).iter_batches(
                    batch_size=batch_rows, columns=names, use_threads=False
                )
                for rb in it:
                    yield {n: _to_numpy(rb.column(i)) for i, n in enumerate(names)}
            except pa.ArrowException as e:
                raise InputError(f"{f}: {first_line(e)}") from None

    def _row_group(self, f: str, g: int, names: list[str]) -> pa.Table:
        """One row group's columns, kept while the next reads of the same columns stay in
        it (a task, or a learner, reading chunk by chunk decodes it once)."""
        key = (f, g, tuple(names))
        if key not in self._groups:
            try:
                # on this thread, as batches() (a Dask task or a pass worker is one core)
                table = self._file(f).read_row_group(g, columns=names, use_threads=False)
            except pa.ArrowException as e:
                raise InputError(f"{f}: {first_line(e)}") from None
            self._groups = {k: t for k, t in self._groups.items() if k[2] != key[2]}
            self._groups[key] = table
        return self._groups[key]

    def read_rows(self, names: list[str], start: int, stop: int) -> dict[str, np.ndarray]:
        """Rows ``start .. stop-1`` (global) of the columns, reading only the row groups that
        hold them."""
        parts = []
        for f, g, r0, n in self.row_groups:
            if r0 + n <= start or r0 >= stop:
                continue
            t = self._row_group(f, g, names)
            t = t.slice(max(start - r0, 0), min(stop, r0 + n) - max(start, r0))
            parts.append({n_: _to_numpy(t.column(n_)) for n_ in names})
        if not parts:
            return {n: np.empty(0) for n in names}
        return {n: np.concatenate([p[n] for p in parts]) for n in names}

    def close(self):
        self._open.clear()
        self._groups = {}


def _binary_kind(head: bytes) -> tuple[bytes, str] | None:
    """What binary data the first bytes ``head`` of a CSV input are: (its magic, what it
    is) for a known format (:data:`rfcli.io.kinds.MAGIC`), (b"", "a binary file") for other
    bytes holding a NUL; None for text."""
    for magic, _, what in MAGIC:
        if head.startswith(magic):
            return magic, what
    return (b"", "a binary file") if b"\x00" in head else None


def check_text_file(path: str) -> None:
    """Refuse a file given as CSV that is binary: a Parquet file named ``.csv`` would
    otherwise be parsed into column names of binary garbage."""
    head = sniff(path)
    if path.lower().endswith(".gz"):
        return  # compressed CSV: pyarrow decompresses it
    kind = _binary_kind(head)
    if kind is None:
        return
    magic, what = kind
    if not magic:
        raise InputError(f"{path}: is a binary file, not CSV text")
    hint = "; rename it to end in .parquet or give the format, fmt)" if magic == b"PAR1" else ")"
    raise InputError(f"{path}: is {what}, not CSV text (despite its name{hint}")


def check_text_stdin(head: bytes) -> None:
    """Refuse binary standard input, which is read as CSV: a Parquet file piped in (``cat
    data.parquet | rfcli ...``) was parsed as CSV and refused for a line's field count."""
    kind = _binary_kind(head)
    if kind is not None:
        raise InputError(
            f"-: standard input is {kind[1]}, not CSV text (stdin is read as CSV: give the "
            "file's path instead)"
        )


#: file names read as tab-separated (else comma-separated), compressed or not
TAB_SUFFIXES = (".tsv", ".tab", ".tsv.gz", ".tab.gz")


def delimiter_for(path: str, delimiter: str | None = None) -> str:
    """The field delimiter of a CSV input: ``delimiter`` if given, else a tab for the names
    of :data:`TAB_SUFFIXES`, else a comma."""
    if delimiter is not None:
        return delimiter
    return "\t" if path.lower().endswith(TAB_SUFFIXES) else ","


#: a cell that reads as a number (as pyarrow parses float columns; missing-value markers
#: such as NA and nan are read as missing values, not text)
_NUMBER = r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[iI]nf(inity)?)\s*$"
#: a number written with a decimal comma (or thousands separators): ``1,5``, ``1,234,567``
_COMMA_NUMBER = r"^\s*[-+]?\d[\d,]*,\d+\s*$"
#: ``CSV parse error: Row #3: Expected 2 columns, got 1: 3`` (the row: the file's line)
_RAGGED = r"CSV parse error: Row #(\d+): Expected (\d+) columns, got (\d+)"
#: ``In CSV column #1: Row #302: CSV conversion error to double: invalid value 'abc'``
#: (pyarrow's row is the line of the file, the header being line 1)
_CONVERSION = r"In CSV column #(\d+): Row #(\d+): CSV conversion error to \w+: invalid value '(.*)'"


def _text_cells(col: pa.Array) -> tuple[int, str] | None:
    """In a text column whose cells are numbers but for a few (more than half of its
    non-empty cells are numbers): the first cell that is not, (row, text); else None (a
    column of text: names, classes, codes)."""
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    is_number = pc.match_substring_regex(col, _NUMBER).fill_null(True)
    # numbers with decimal commas count as numbers here: a column of them is refused by
    # its first cell (text_cell_error says why), not left out as text
    numberish = pc.or_(is_number, pc.match_substring_regex(col, _COMMA_NUMBER).fill_null(True))
    n_numbers = pc.sum(pc.and_(numberish, pc.is_valid(col))).as_py() or 0
    if n_numbers * 2 <= len(col) - col.null_count:
        return None
    row = pc.index(is_number, False).as_py()
    return (row, col[row].as_py()) if row >= 0 else None


class CsvSource(Source):
    """CSV from a file or stdin (``delimiter``: see :func:`delimiter_for`).  Types are
    inferred from the first block; feature columns are then read as float64.  stdin can be
    read once only (see ``spool``).

    A column that the first block gives as text but whose cells are mostly numbers is a
    column of numbers with bad cells: :meth:`bad_cell` names the first (the selection of
    feature columns refuses it, rather than leave the column out as text)."""

    #: the file line of the first data row (the header is line 1): messages name lines
    first_line = 2

    def __init__(self, path: str, spool: bool = False, block_size: int = 1 << 22,
                 delimiter: str | None = None):  # fmt: skip
        self.path = path
        self._block = block_size
        self.delimiter = delimiter_for(path, delimiter)
        self._tmp: str | None = None
        if path == "-" and spool:
            fd, self._tmp = tempfile.mkstemp(prefix="rfcli-stdin-", suffix=".csv")
            with os.fdopen(fd, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
        self.rereadable = path != "-" or spool
        if path != "-":
            check_text_file(path)
        else:  # a spooled copy's first bytes, or a pipe's, left in its buffer (a stream
            # that cannot peek, such as a test runner's BytesIO, is not checked)
            peek = getattr(sys.stdin.buffer, "peek", None)
            check_text_stdin(sniff(self._tmp) if self._tmp else peek(4096) if peek else b"")
        reader = self._open(None)
        schema = reader.schema
        self.names = list(schema.names)
        self.numeric = {f.name: _is_numeric(f.type) or pa.types.is_null(f.type) for f in schema}
        self._first_reader = reader if not self.rereadable else None
        self._head = None  # the first batch of a stream read once (stdin), once read
        self._bad: dict[str, tuple[int, str]] = {}
        text = [f.name for f in schema if pa.types.is_string(f.type)
                or pa.types.is_large_string(f.type)]  # fmt: skip
        if text:  # the first block: its text columns that are numbers with bad cells
            head = self._next(reader, 0)
            if head is not None:
                for name in text:
                    bad = _text_cells(head.column(schema.get_field_index(name)))
                    if bad is not None:
                        self._bad[name] = bad
            if not self.rereadable:
                self._head = head

    def bad_cell(self, name: str) -> tuple[int, str] | None:
        """(line, text) of the first cell of column ``name`` that is not a number, when the
        column's other cells are (mostly) numbers; None for a column of numbers or text."""
        bad = self._bad.get(name)
        return None if bad is None else (self.first_line + bad[0], bad[1])

    def delimiter_hint(self) -> str:
        """For a message about missing columns: a header read as one column that holds tabs
        or semicolons (a file with another delimiter), what to set."""
        if len(self.names) != 1:
            return ""
        for char, word in (("\t", "tab"), (";", "semicolon"), ("|", "pipe")):
            if char in self.names[0] and char != self.delimiter:
                return (f" (its header holds {word}s: set delimiter={char!r} if it is "
                        f"{word}-separated)")  # fmt: skip
        return ""

    @property
    def _file(self):
        if self._tmp:
            return self._tmp
        return sys.stdin.buffer if self.path == "-" else self.path

    def _open(self, float_columns: list[str] | None):
        convert = pacsv.ConvertOptions(
            column_types={c: pa.float64() for c in float_columns} if float_columns else None,
        )
        try:
            return pacsv.open_csv(
                self._file,
                # single-threaded parsing: pyarrow then names the row of a parse error
                # (with threads the message depends on scheduling)
                read_options=pacsv.ReadOptions(block_size=self._block, use_threads=False),
                parse_options=pacsv.ParseOptions(delimiter=self.delimiter),
                convert_options=convert,
            )
        except FileNotFoundError:
            raise InputError(f"{self.path}: no such file") from None
        except pa.ArrowInvalid as e:
            if "Empty CSV file" in str(e):
                raise InputError(f"{self.path}: empty CSV file (no header)") from None
            raise self._error(e, None) from None
        except OSError as e:
            raise InputError(f"{self.path}: cannot read ({first_line(e)})") from None

    def _error(self, e: pa.ArrowInvalid, rows: int | None) -> InputError:
        """A CSV error in one line: a cell that is not a number by its file line, column and
        text; else pyarrow's message (after about ``rows`` rows when known)."""
        import re

        m = re.match(_CONVERSION, first_line(e))
        if m:
            col, line, value = int(m.group(1)), int(m.group(2)), m.group(3)
            name = self.names[col] if col < len(getattr(self, "names", ())) else f"#{col}"
            return text_cell_error(self.path, line, name, value)
        m = re.match(_RAGGED, first_line(e))
        if m:
            line, want, got = (int(g) for g in m.groups())
            return InputError(
                f"{self.path}: line {line} has {got} field{'s' if got != 1 else ''}, the header "
                f"{want} (fix that line; a field that holds {self.delimiter!r} must be quoted)"
            )
        if rows is None:
            return InputError(f"{self.path}: malformed CSV ({first_line(e)})")
        return InputError(f"{self.path}: bad CSV after about row {rows} ({first_line(e)})")

    def _next(self, reader, rows: int):
        try:
            return reader.read_next_batch()
        except StopIteration:
            return None
        except pa.ArrowInvalid as e:
            raise self._error(e, rows) from None

    def batches(self, names, batch_rows, float_columns=None):
        head = None
        if self._first_reader is not None:
            reader, self._first_reader = self._first_reader, None
            head, self._head = self._head, None
        elif self.rereadable:
            reader = self._open(float_columns)
        else:
            raise InputError("standard input can only be read once")
        idx = [reader.schema.get_field_index(n) for n in names]
        rows = 0
        while True:
            rb = head if head is not None else self._next(reader, rows)
            head = None
            if rb is None:
                return
            rows += rb.num_rows
            yield {n: _to_numpy(rb.column(i)) for n, i in zip(names, idx, strict=True)}

    def close(self):
        self._release()

    def _release(self) -> None:
        self._first_reader = self._head = None
        if self._tmp and os.path.exists(self._tmp):
            os.unlink(self._tmp)
            self._tmp = None

    def __del__(self):  # a spooled stdin is removed even when close() was never called
        try:
            self._release()
        except Exception:  # noqa: S110 (interpreter shutdown: nothing left to report)
            pass


def text_cell_error(path: str, line: int, name: str, value: str) -> InputError:
    """A cell of text in a column of numbers, by its file line (a number with a decimal
    comma: said so)."""
    import re

    if re.match(_COMMA_NUMBER, value):
        return InputError(
            f"{path}: line {line}: column {name!r} holds {value!r}, a number with a decimal "
            "comma or thousands separators, read as text: write numbers with a decimal point "
            "and no separators (or choose the feature columns with columns)"
        )
    return InputError(
        f"{path}: line {line}: column {name!r} holds {value!r}, not a number like its other "
        "cells (fix that cell, or choose the feature columns with columns)"
    )


class ZarrSource(Source):
    """A Zarr group whose 1-D arrays of equal length are columns, or one 2-D array
    (columns named x0, x1, ...)."""

    def __init__(self, path: str):
        import zarr

        self.path = path
        try:
            node = zarr.open(path, mode="r")
        except (FileNotFoundError, zarr.errors.NodeNotFoundError):
            raise InputError(f"{path}: no such Zarr array or group") from None
        except Exception as e:  # zarr raises various errors on junk
            raise InputError(f"{path}: cannot open as Zarr ({first_line(e)})") from None
        if isinstance(node, zarr.Array):
            if node.ndim != 2:
                raise InputError(f"{path}: a Zarr array input must be 2-D, got shape {node.shape}")
            self._array = node
            self.names = [f"x{j}" for j in range(node.shape[1])]
            self.numeric = dict.fromkeys(self.names, np.issubdtype(node.dtype, np.number))
            self.num_rows = node.shape[0]
        else:
            if "rfcli" in node.attrs:
                raise InputError(f"{path}: this is an rfcli feature store, not input data")
            self._array = None
            self._cols = {k: a for k, a in node.arrays() if a.ndim == 1}
            if not self._cols:
                raise InputError(f"{path}: the Zarr group holds no 1-D column arrays")
            lengths = {a.shape[0] for a in self._cols.values()}
            if len(lengths) != 1:
                raise InputError(
                    f"{path}: the Zarr group's column arrays differ in length {sorted(lengths)}"
                )
            self.names = sorted(self._cols)
            self.numeric = {
                k: bool(np.issubdtype(a.dtype, np.number) or a.dtype == bool)
                for k, a in self._cols.items()
            }
            self.num_rows = lengths.pop()

    def batches(self, names, batch_rows):
        for start in range(0, self.num_rows, batch_rows):
            stop = min(start + batch_rows, self.num_rows)
            if self._array is not None:
                block = self._array[start:stop]
                yield {n: block[:, int(n[1:])] for n in names}
            else:
                yield {n: np.asarray(self._cols[n][start:stop]) for n in names}


#: Arrow's fixed-width numeric types and their NumPy dtypes: their values buffer is the
#: array, so a column without nulls is viewed in place.  (pyarrow's own ``to_numpy``
#: imports pandas when it is installed, 0.3 s that a one-shot CLI process would pay.)
_NUMPY_TYPES = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32,
    pa.uint64(): np.uint64, pa.float16(): np.float16, pa.float32(): np.float32,
    pa.float64(): np.float64,
}  # fmt: skip


def _to_numpy(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    t = col.type
    if pa.types.is_null(t):
        return np.full(len(col), np.nan)
    dtype = _NUMPY_TYPES.get(t)
    if dtype is not None and not col.null_count:
        return np.frombuffer(col.buffers()[1], dtype, len(col), col.offset * t.bit_width // 8)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        if col.null_count:
            return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
    return np.asarray(col.cast(pa.string()).to_pylist(), dtype=object)
