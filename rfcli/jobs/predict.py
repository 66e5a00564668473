"""The predict job (``rfcli predict``): a model's predictions for a store or raw input,
written to a table in row order, on either engine."""

from __future__ import annotations

import numpy as np

from rfcli.engines import open_engine
from rfcli.io.writers import TableWriter
from rfcli.learn.data import open_data
from rfcli.learn.linear import LinearModel
from rfcli.learn.model_file import load_model
from rfcli.progress import NullProgress, Progress


def predict(
    model_path: str,
    input_path: str,
    output: str,
    *,
    ids: list[str] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    engine: str = "local",
    dask=None,
) -> int:
    """Predictions for a store or raw data, written to Parquet/CSV (``-`` = stdout).
    ``engine="dask"``: slices of rows are predicted on a Dask cluster and written here in
    row order (the same batches as locally: the same output bytes)."""
    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    data = open_data(input_path, encoder, model.normalized, None, ids)
    writer = TableWriter(output, data.n_rows or 0, 0, overwrite=overwrite)
    n = 0
    try:
        with open_engine(engine, dask, progress) as eng:
            passes = eng.passes(data)
            for cols in passes.map_batches(prediction_columns, model, title="predicting"):
                writer.write(None, cols)
                n += len(cols["prediction"])
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return n


def prediction_columns(batch, model: LinearModel) -> dict[str, np.ndarray]:
    """The id columns, the prediction (and the GP's standard deviation) of one batch."""
    cols = dict(batch.ids)
    cols["prediction"] = model.predict(batch.F)
    if hasattr(model, "std"):
        cols["std"] = model.std(batch.F)
    return cols
