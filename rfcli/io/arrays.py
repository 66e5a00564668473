"""In-memory input: NumPy arrays, pandas DataFrames and pyarrow Tables as a
:class:`~rfcli.io.sources.Source`, so that the chunked reading of
:mod:`rfcli.io.readers` (``select_columns``, ``iter_chunks``, ``read_range``) and
everything built on it (fitting an encoder, the learners' passes) run on them exactly as
on a file.

Columns: a 2-D NumPy array's are ``x0 .. x{d-1}`` (or ``names``); a DataFrame's and a
Table's are their own (as text).  ``extra`` adds 1-D columns of the same length (a label
kept apart from the features, as scikit-learn keeps ``y`` apart from ``X``).  Nothing is
copied up front: every batch is a slice of the data, converted to NumPy per column (a
pyarrow or pandas extension column with missing values becomes float64 with NaN, like a
Parquet column with nulls), so reading in chunks keeps memory bounded by the chunk.
An ``extra`` column may also be 2-D, ``(n, k)``: a label of k outputs (multi-output
regression), never a feature.

:func:`rfcli.io.readers.open_source` opens in-memory data as an :class:`ArraySource`
wherever it opens a path, so every job takes it; messages name it by its kind and shape
(``<DataFrame 1000 x 17>``, :func:`rfcli.io.location.describe`).

>>> import numpy as np
>>> from rfcli.io.readers import iter_chunks, select_columns
>>> src = ArraySource(np.arange(12.0).reshape(6, 2), extra={"y": np.arange(6) % 2})
>>> src.names, src.num_rows
(['x0', 'x1', 'y'], 6)
>>> [(ch.row0, ch.X.shape, ch.label.tolist()) for ch in
...  iter_chunks(src, select_columns(src, label="y"), chunk_rows=4)]
[(0, (4, 2), [0, 1, 0, 1]), (4, (2, 2), [0, 1])]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from rfcli.errors import InputError, ParameterTypeError
from rfcli.io import location
from rfcli.io.sources import Source, _is_numeric, _to_numpy

#: what a model file records as the input of a model fitted on in-memory data
ARRAY_PATH = "<in-memory data>"


def is_array_input(obj: Any) -> bool:
    """Whether ``obj`` is in-memory table data that :class:`ArraySource` reads (rather than
    a path): a NumPy array, a pandas DataFrame, a pyarrow Table or RecordBatch, an object
    with the Arrow PyCapsule stream interface (polars, DuckDB results, ...), or a mapping
    of column names to 1-D arrays."""
    if isinstance(obj, ArraySource | np.ndarray | pa.Table | pa.RecordBatch | Mapping):
        return True
    return _is_pandas(obj) or hasattr(obj, "__arrow_c_stream__")


def _is_pandas(obj: Any) -> bool:
    """A pandas DataFrame or Series (pandas is not imported to find out)."""
    return type(obj).__module__.split(".")[0] == "pandas" and hasattr(obj, "iloc")


def _is_dataframe(obj: Any) -> bool:
    return _is_pandas(obj) and getattr(obj, "ndim", 2) == 2


class ExtraColumnClash(InputError):
    """An ``extra`` column named like one of the data's own."""

    def __init__(self, name: str, path: str):
        super().__init__(f"{path}: column name {name!r} appears twice")
        self.name, self.path = name, path


class ArraySource(Source):
    """A table held in memory, read in batches like a file (see the module docstring).

    ``data``: a 2-D NumPy array (columns ``names`` or ``x0..``), a pandas DataFrame, a
    pyarrow Table/RecordBatch (or an Arrow stream object), or a mapping of names to 1-D
    arrays.  ``extra``: more columns (name -> array of the same length), e.g. a label.
    ``path``: what messages call it (default: its kind and shape).  ``named``: False for a
    NumPy array without ``names`` (its columns are only ``x0..``).
    """

    rereadable = True

    def __init__(
        self,
        data: Any,
        names: list[str] | None = None,
        extra: Mapping[str, Any] | None = None,
        path: str | None = None,
    ):
        path = self.path = location.describe(data) if path is None else path
        self._kind, self._data = _normalize(data, path)
        own = self._own_names()
        self.named = self._kind != "numpy" or names is not None
        if names is not None:
            names = [str(n) for n in names]
            if len(names) != len(own):
                raise InputError(f"{path}: {len(names)} column names given for {len(own)} columns")
            own = names
        self.n_own = len(own)  # the data's own columns (``extra`` comes after them)
        self._cols: dict[str, tuple[str, Any]] = {}  # name -> (kind, column handle)
        self.widths: dict[str, int] = {}  # columns of a 2-D extra column (a multi-output label)
        if self._kind == "mapping":
            arrays = [np.asarray(v) for v in self._data.values()]
            self.num_rows = len(arrays[0]) if arrays else 0
            for name, arr in zip(own, arrays, strict=True):
                self._add_1d(name, arr)
        else:
            for j, name in enumerate(own):
                self._add(name, (self._kind, j))
            self.num_rows = self._own_rows()
        for name, col in (extra or {}).items():
            if str(name) in self._cols:
                raise ExtraColumnClash(str(name), self.path)
            self._add_1d(str(name), _column_values(col), wide=True)
        self.names = list(self._cols)
        # a 2-D column is a label of several outputs: never numeric, so never a feature
        self.numeric = {n: n not in self.widths and self._is_numeric(n) for n in self.names}

    # -- the columns ------------------------------------------------------------------------
    def _add_1d(self, name: str, arr: np.ndarray, wide: bool = False) -> None:
        if arr.ndim not in ((1, 2) if wide else (1,)) or len(arr) != self.num_rows:
            raise InputError(
                f"{self.path}: column {name!r} has shape {arr.shape}; expected "
                f"({self.num_rows},) like the other columns"
            )
        if arr.ndim == 2:
            self.widths[name] = arr.shape[1]
        self._add(name, ("numpy1d", arr))

    def _add(self, name: str, handle) -> None:
        if name in self._cols:
            raise InputError(f"{self.path}: column name {name!r} appears twice")
        self._cols[name] = handle

    def _own_names(self) -> list[str]:
        kind, data = self._kind, self._data
        if kind == "numpy":
            return [f"x{j}" for j in range(data.shape[1])]
        if kind == "arrow":
            return [str(c) for c in data.column_names]
        if kind == "pandas":
            return [str(c) for c in data.columns]
        return [str(c) for c in data]  # mapping

    def _own_rows(self) -> int:
        kind, data = self._kind, self._data
        if kind == "numpy":
            return int(data.shape[0])
        if kind == "arrow":
            return int(data.num_rows)
        return int(len(data))  # pandas

    def _is_numeric(self, name: str) -> bool:
        kind, ref = self._cols[name]
        if kind == "numpy":
            return self._data.dtype.kind in "biuf"
        if kind == "arrow":
            t = self._data.schema.field(ref).type
            return _is_numeric(t) or pa.types.is_null(t)
        if kind == "pandas":
            import pandas as pd

            dtype = self._data.dtypes.iloc[ref]
            return bool(pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))
        return ref.dtype.kind in "biuf"  # numpy1d

    def _column(self, name: str, start: int, stop: int) -> np.ndarray:
        kind, ref = self._cols[name]
        data = self._data
        if kind == "numpy":
            return data[start:stop, ref]
        if kind == "numpy1d":
            return ref[start:stop]
        if kind == "arrow":
            return _to_numpy(data.column(ref).slice(start, stop - start).combine_chunks())
        return _pandas_values(data.iloc[start:stop, ref])  # pandas

    # -- the Source interface ---------------------------------------------------------------
    def batches(self, names: list[str], batch_rows: int) -> Iterator[dict[str, np.ndarray]]:
        for start in range(0, self.num_rows, batch_rows):
            yield self.read_rows(names, start, min(start + batch_rows, self.num_rows))

    def read_rows(self, names: list[str], start: int, stop: int) -> dict[str, np.ndarray]:
        """Rows ``start .. stop-1`` of the columns ``names``."""
        start, stop = max(start, 0), min(stop, self.num_rows)
        stop = max(stop, start)
        return {n: self._column(n, start, stop) for n in names}

    def close(self) -> None:
        pass


def unnamed_hint(source: Source) -> str:
    """What to add to a message about a column that ``source`` lacks when it is a NumPy
    array without column names (else nothing)."""
    if getattr(source, "named", True):
        return ""
    d = source.n_own
    return (
        f"; a NumPy array has no column names (its columns read as x0..x{d - 1}): pass a "
        "pandas DataFrame or a pyarrow Table with named columns"
    )


def _column_values(col: Any) -> np.ndarray:
    """An extra column (NumPy, pandas Series, pyarrow array) as a NumPy array."""
    if isinstance(col, pa.ChunkedArray | pa.Array):
        return _to_numpy(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    if _is_pandas(col):
        return _pandas_values(col) if col.ndim == 1 else col.to_numpy()
    return np.asarray(col)


def _normalize(data: Any, path: str) -> tuple[str, Any]:
    """(kind, data) of the supported in-memory inputs."""
    if isinstance(data, ArraySource):
        raise ParameterTypeError("data is already an ArraySource")
    if isinstance(data, np.ndarray) or (_is_pandas(data) and data.ndim == 1):
        if data.ndim != 2:
            raise InputError(
                f"{path}: in-memory input must be 2-D (rows x columns), got shape "
                f"{tuple(data.shape)}; one feature is a column: X.reshape(-1, 1)"
            )
        return "numpy", data
    if isinstance(data, pa.RecordBatch):
        return "arrow", pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return "arrow", data
    if _is_dataframe(data):
        return "pandas", data
    if isinstance(data, Mapping):
        return "mapping", dict(data)
    if hasattr(data, "__arrow_c_stream__"):
        return "arrow", pa.table(data)
    raise ParameterTypeError(
        "in-memory data must be a 2-D NumPy array, a pandas DataFrame, a pyarrow Table, "
        f"an Arrow stream object or a mapping of columns, got {type(data).__name__}"
    )


def _pandas_values(col) -> np.ndarray:
    """A pandas column slice as NumPy: numbers (extension dtypes with missing values as
    float64 with NaN, like Parquet nulls), else an object array of its values."""
    import pandas as pd

    dtype = col.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        if isinstance(dtype, np.dtype):
            return col.to_numpy()
        if col.isna().any():
            return col.to_numpy(dtype=np.float64, na_value=np.nan)
        return col.to_numpy(dtype=getattr(dtype, "numpy_dtype", None))
    return col.astype(object).where(col.notna(), None).to_numpy(dtype=object)


__all__ = ["ARRAY_PATH", "ArraySource", "is_array_input", "unnamed_hint"]
