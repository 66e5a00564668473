"""The predict job (``rfcli predict``): a model's predictions for a store or raw input
(a path or in-memory data), written to a table in row order, on either engine, or
returned in memory.

Predictions have the label's type: int64 for integer classes, float64 for regression (and
the GP's ``std``), bool, or text; so do the .npy, Parquet and CSV outputs (an .npy file
holds the predictions alone: a 1-D array, or ``(n, 2)`` float64 [prediction, std] for a GP).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcli.encoder import Encoder
from rfcli.errors import InputError, ParameterTypeError, UsageError, did_you_mean
from rfcli.io import location
from rfcli.io.columns import not_found
from rfcli.io.settings import check_on_nan
from rfcli.io.writers import TableWriter, output_format
from rfcli.jobs.resources import Resources
from rfcli.jobs.result import TrainResult
from rfcli.learn.data import RawData, StoreData, open_data
from rfcli.learn.linear import LinearModel
from rfcli.learn.model_file import load_model
from rfcli.progress import NullProgress, Progress


class PredictResult(int):
    """The number of rows written (an int, as before), with the output, its columns and
    their types (:meth:`to_dict`: the summary ``rfcli predict --json`` prints)."""

    output: str
    columns: list[str]
    types: dict[str, str]

    def __new__(cls, rows: int, output: str, columns: list[str], types: dict[str, str]):
        obj = super().__new__(cls, rows)
        obj.output, obj.columns, obj.types = output, list(columns), dict(types)
        return obj

    @property
    def rows(self) -> int:
        return int(self)

    def to_dict(self) -> dict:
        return {"rows": self.rows, "output": self.output, "format": output_format(self.output),
                "columns": self.columns, "types": self.types}  # fmt: skip


def open_model(model) -> tuple[LinearModel, Encoder, dict[str, Any]]:
    """(model, encoder, metadata) of a model: a model file's path, or the result of a
    train job (:class:`~rfcli.jobs.result.TrainResult`, as if saved and loaded)."""
    if isinstance(model, TrainResult):
        return model.model, model.encoder, {"trained_on": dict(model.trained_on)}
    if not location.is_path(model):
        raise ParameterTypeError(
            f"model must be a model file's path or a TrainResult, got {type(model).__name__}"
        )
    return load_model(location.name(model))


def predict(
    model_path,
    input_path,
    output: str | None = None,
    *,
    ids: list[str] | None = None,
    on_nan: str = "error",
    delimiter: str | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> PredictResult | dict[str, np.ndarray]:
    """Predictions of a model (a model file, or a :class:`~rfcli.jobs.result.TrainResult`)
    for a store or raw data (a path, or in-memory data: a 2-D NumPy array, a pandas
    DataFrame, a pyarrow Table, with the model's input columns), written to .npy, Parquet
    or CSV (``-`` = CSV on stdout); ``output=None``: returned instead, as the columns the
    Parquet output would hold (a dict of NumPy arrays: the id columns, ``prediction``,
    and ``std`` for a GP).  ``ids``: id columns to pass through: of raw input, or the id
    arrays of a store (by default a store's are all carried); a name that the input does
    not have is refused.  ``on_nan``: rows of raw input with NaN/inf features: ``error``,
    ``zero``, or ``drop`` (local engine; the output then has fewer rows than the input).
    ``engine="dask"``: slices of rows are predicted on a Dask cluster and written here in
    row order (the same batches as locally: the same output bytes).  ``delimiter``: of CSV
    input (default: a tab for .tsv/.tab names, else a comma).

    Parameters
    ----------
    model_path : str or TrainResult
        A model file, or a training result.
    input_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        A store encoded with the model's map, or raw data with the model's columns
        (matched by name).
    output : str or None, default=None
        ``.npy``, ``.parquet``, ``.csv`` or ``"-"``; None: returned.
    ids, on_nan, delimiter
        Id columns to carry, rows with NaN/inf, the CSV delimiter (above).
    overwrite : bool, default=False
        Replace an existing ``output``.
    threads, memory, engine, dask
        The resources (rfcli.jobs.resources); ``memory`` bounds the rows per batch.
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    PredictResult or dict of numpy.ndarray
        The rows written (with the output's columns and types), or the columns.

    Raises
    ------
    InputError
        Unreadable input, missing columns, a store of another map.
    OutputError
        ``output`` exists (without ``overwrite``) or has an unknown extension.
    UsageError
        A bad option or resource.
    """
    res = Resources(threads=threads, memory=memory, engine=engine, dask=dask)
    check_on_nan(on_nan, engine)
    fmt = output_format(output) if output is not None else "memory"  # a bad extension: at once
    ids = list(ids or [])
    if fmt == "npy" and ids:
        raise UsageError(f"{output}: an .npy output holds the predictions only: id columns "
                         "need .parquet or .csv")  # fmt: skip
    model, encoder, meta = open_model(model_path)
    progress = progress or NullProgress()
    with _open(input_path, encoder, model, ids, on_nan, delimiter,
               chunk_rows=res.batch_rows(encoder)) as data:  # fmt: skip
        return _predict(data, model, input_path, res, output=output, fmt=fmt, ids=ids,
                        overwrite=overwrite, progress=progress)  # fmt: skip


def _predict(data, model, input_path, res: Resources, *, output, fmt, ids, overwrite, progress):
    """The predictions of :func:`predict` on the open input ``data``."""
    keep = _id_columns(data, location.name(input_path), ids) if fmt != "npy" else []
    targets = model.targets
    names = ["prediction", *(["std"] if hasattr(model, "std") else [])]
    dtype = targets.value_dtype if len(names) == 1 else np.dtype(np.float64)
    if output is None:
        writer = _InMemory()
    else:
        writer = TableWriter(output, data.n_rows or 0, 0, overwrite=overwrite,
                             npy_columns=(names, dtype))  # fmt: skip
    n = 0
    try:
        with res.open(progress) as eng:
            passes = eng.passes(data)
            for cols in passes.map_batches(prediction_columns, model, keep, title="predicting"):
                writer.write(None, cols)
                n += len(cols["prediction"])
        writer.close()
    except BaseException:
        writer.abort()
        raise
    if output is None:
        return writer.columns([*keep, *names])
    value = "text" if targets.value_kind == "text" else str(targets.value_dtype)
    types = {**dict.fromkeys(keep, "id"), "prediction": value}
    if len(names) > 1:
        types["std"] = "float64"
    columns = names if fmt == "npy" else [*keep, *names]
    return PredictResult(n, output, columns, {c: types[c] for c in columns})


class _InMemory:
    """Where the predictions go with ``output=None``: every batch's columns, joined at
    the end (the writer interface of :class:`~rfcli.io.writers.TableWriter`)."""

    def __init__(self):
        self.parts: list[dict[str, np.ndarray]] = []

    def write(self, matrix, columns: dict[str, np.ndarray]) -> None:
        self.parts.append(columns)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self.parts = []

    def columns(self, names: list[str]) -> dict[str, np.ndarray]:
        if not self.parts:
            return {n: np.empty(0) for n in names}
        return {n: np.concatenate([p[n] for p in self.parts]) for n in names}


def _open(path, encoder, model, ids: list[str], on_nan: str, delimiter: str | None = None, *,
          chunk_rows: int | None = None):  # fmt: skip
    """The store or raw input to predict on (raw input, a path or in-memory data: with
    ``ids``, ``on_nan`` and ``delimiter``), in batches of ``chunk_rows`` (None: the data's
    own)."""
    if location.is_store(path):
        return open_data(path, encoder, model.normalized, None, chunk_rows=chunk_rows)
    return RawData.open(path, encoder, model.normalized, None, ids, chunk_rows=chunk_rows or 8192,
                        on_nan=on_nan, delimiter=delimiter)  # fmt: skip


def _id_columns(data, path: str, ids: list[str]) -> list[str]:
    """The id columns to write: those asked for (each must exist in the input), or all of
    a store's id arrays."""
    if isinstance(data, StoreData):
        have = list(data.store.meta.get("ids", []))
        where = f"{path}: the store"
    else:
        have = list(data.source.names)
        where = f"{path}:"
    if not ids:
        return have if isinstance(data, StoreData) else []
    for name in ids:
        if name not in have:
            if isinstance(data, StoreData):
                listed = ", ".join(have) if have else "none"
                raise InputError(
                    f"{where} has no id column {name!r}{did_you_mean(name, have)} (its id "
                    f"columns: {listed}; encode the data with the ids to carry them)"
                )
            raise InputError(not_found(path, "id", name, have))
    if isinstance(data, RawData):
        missing = [i for i in ids if i not in data.sel.ids]
        if missing:  # pragma: no cover - RawData.open keeps every id the input has
            raise InputError(f"{path}: id column(s) {', '.join(missing)} could not be read")
    return list(dict.fromkeys(ids))


def prediction_columns(batch, model: LinearModel, ids: list[str] | None = None):
    """The id columns ``ids`` (default: all of the batch's), the prediction with the
    label's type (and the GP's standard deviation) of one batch."""
    cols = {k: v for k, v in batch.ids.items() if ids is None or k in ids}
    if ids is not None:
        cols = {k: cols[k] for k in ids if k in cols}
    cols["prediction"] = model.targets.typed(model.predict(batch.F))
    if hasattr(model, "std"):
        cols["std"] = np.asarray(model.std(batch.F), dtype=np.float64)
    return cols
