"""Streaming writers for tables of decoded features or predictions: .npy, Parquet, CSV
(``-`` is CSV on stdout).  Rows arrive in chunks; nothing is held whole."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from rfcli.errors import OutputError, UsageError
from rfcli.io.atomic import check_parent

OUTPUT_FORMATS = ("npy", "parquet", "csv")


def output_format(path: str) -> str:
    if path == "-":
        return "csv"
    low = path.lower()
    for ext, fmt in ((".npy", "npy"), (".parquet", "parquet"), (".pq", "parquet"), (".csv", "csv")):
        if low.endswith(ext):
            return fmt
    raise UsageError(
        f"{path}: output must end in .npy, .parquet or .csv (or be - for CSV on stdout)"
    )


def check_output_path(path: str, overwrite: bool) -> None:
    if path == "-":
        return
    if os.path.exists(path) and not overwrite:
        raise OutputError(f"{path}: already exists (set overwrite to replace it)")
    check_parent(path)


def arrow_array(v: np.ndarray) -> pa.Array:
    """A 1-D NumPy column as an Arrow array.  Numbers are wrapped as they are (copied only
    when strided): ``pa.array`` imports pandas, where it is installed, to ask whether its
    argument is a pandas object, which costs a prediction's start 0.3 s.  Booleans,
    strings and objects (as strings) go through ``pa.array``."""
    if v.dtype.kind in "iuf" and v.dtype.isnative:
        v = np.ascontiguousarray(v)
        return pa.Array.from_buffers(pa.from_numpy_dtype(v.dtype), len(v), [None, pa.py_buffer(v)])
    return pa.array(v if v.dtype != object else v.astype(str))


def csv_header(names: list[str]) -> bytes:
    """The CSV header line: names as they are (``prediction``, not ``"prediction"``), quoted
    only when they hold a comma, a quote, a line break or edge spaces (RFC 4180)."""

    def cell(name: str) -> str:
        if any(c in name for c in ',"\r\n') or name != name.strip():
            return '"' + name.replace('"', '""') + '"'
        return name

    return (",".join(cell(str(n)) for n in names) + "\n").encode()


class TableWriter:
    """Write chunks of named columns (1-D arrays) plus an optional float matrix
    (columns ``prefix0..``) to npy, Parquet or CSV.

    An .npy file holds the float32 matrix, or with ``npy_columns`` (names and one dtype)
    those columns instead: a 1-D array for one column, else ``(n, k)``; the row count need
    not be known in advance then (the rows are streamed to a temporary file and the header
    written last)."""

    def __init__(
        self,
        path: str,
        n_rows: int,
        n_cols: int,
        overwrite: bool = False,
        prefix: str = "f",
        npy_columns: tuple[list[str], np.dtype] | None = None,
    ):
        self.path = path
        self.fmt = output_format(path)
        check_output_path(path, overwrite)
        self.n_cols, self.prefix = n_cols, prefix
        self._pos = 0
        self._writer = None
        self._tmp = path + ".partial" if path != "-" else None
        self._npy_columns = npy_columns if self.fmt == "npy" else None
        self._raw = None
        self._file = None  # the CSV file, opened at the first rows
        if self._npy_columns is not None:
            self._raw = open(self._tmp + ".rows", "wb")  # noqa: SIM115 (closed in close/abort)
        elif self.fmt == "npy":
            self._mm = np.lib.format.open_memmap(
                self._tmp, mode="w+", dtype=np.float32, shape=(n_rows, n_cols)
            )

    def write(
        self, matrix: np.ndarray | None, columns: dict[str, np.ndarray] | None = None
    ) -> None:
        if self._npy_columns is not None:
            names, dtype = self._npy_columns
            block = np.column_stack([np.asarray(columns[n], dtype=dtype) for n in names])
            self._raw.write(np.ascontiguousarray(block).tobytes())
            self._pos += len(block)
            return
        if self.fmt == "npy":
            self._mm[self._pos : self._pos + len(matrix)] = matrix
            self._pos += len(matrix)
            return
        arrays, names = [], []
        for k, v in (columns or {}).items():
            arrays.append(arrow_array(v))
            names.append(k)
        if matrix is not None:
            for j in range(matrix.shape[1]):
                arrays.append(arrow_array(matrix[:, j]))
                names.append(f"{self.prefix}{j}")
        batch = pa.RecordBatch.from_arrays(arrays, names=names)
        if self._writer is None:
            if self.fmt == "parquet":
                self._writer = pq.ParquetWriter(self._tmp, batch.schema, compression="zstd")
            else:
                if self.path == "-":
                    sink = sys.stdout.buffer
                else:
                    sink = self._file = open(self._tmp, "wb")  # noqa: SIM115 (closed in close/abort)
                sink.write(csv_header(names))
                options = pacsv.WriteOptions(include_header=False)
                self._writer = pacsv.CSVWriter(sink, batch.schema, write_options=options)
        self._writer.write_batch(batch)

    def close(self) -> None:
        if self._npy_columns is not None:
            self._finish_npy()
        elif self.fmt == "npy":
            self._mm.flush()
            del self._mm
        elif self._writer is not None:
            self._writer.close()
        if self._file is not None:
            self._file.close()
        if self.path == "-":
            sys.stdout.flush()
        elif self._tmp and os.path.exists(self._tmp):
            os.replace(self._tmp, self.path)

    def _finish_npy(self) -> None:
        """The .npy header (now that the row count is known), then the streamed rows."""
        import shutil

        names, dtype = self._npy_columns
        self._raw.close()
        shape = (self._pos,) if len(names) == 1 else (self._pos, len(names))
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                  "fortran_order": False, "shape": shape}  # fmt: skip
        with open(self._tmp, "wb") as out, open(self._tmp + ".rows", "rb") as rows:
            np.lib.format.write_array_header_1_0(out, header)
            shutil.copyfileobj(rows, out, 1 << 20)
        os.unlink(self._tmp + ".rows")

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._raw is not None:
            self._raw.close()
            if os.path.exists(self._tmp + ".rows"):
                os.unlink(self._tmp + ".rows")
        if self._tmp and os.path.exists(self._tmp):
            os.unlink(self._tmp)
