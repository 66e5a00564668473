"""Using a trained model: predictions written to a table, and metrics on labelled data,
from a store or raw input, on the local engine or a Dask cluster (each a pass of an
additive function over slices of rows, rfcli.learn.passes)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rfcli.errors import InputError, UsageError
from rfcli.io.models_io import load_model
from rfcli.learn.data import open_data
from rfcli.learn.linear import LinearModel
from rfcli.learn.passes import passes_for
from rfcli.metrics import ClassificationAccumulator, RegressionAccumulator, gaussian_nlpd_sum
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
    dask: Any = None,
) -> int:
    """Predictions for a store or raw data, written to Parquet/CSV (``-`` = stdout).
    ``engine="dask"``: slices of rows are predicted on a Dask cluster and written here in
    row order (the same batches as locally: the same output bytes)."""
    from rfcli.io.writers import TableWriter

    if engine not in ("local", "dask"):
        raise UsageError(f"--engine must be local or dask, got {engine!r}")
    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    data = open_data(input_path, encoder, model.normalized, None, ids)
    writer = TableWriter(output, data.n_rows or 0, 0, overwrite=overwrite)
    n = 0
    passes = None
    try:
        if engine == "dask":
            passes = passes_for(data, engine, dask, progress)
        if passes is None:
            with progress.task("predicting", data.n_rows) as task:
                for batch in data.batches(with_ids=True):
                    writer.write(None, _prediction_columns(model, batch))
                    n += len(batch)
                    task.advance(len(batch))
        else:
            for part in passes.map(_predict_pass, model, title="predicting"):
                for cols in part:
                    writer.write(None, cols)
                    n += len(cols["prediction"])
        writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        if passes is not None:
            passes.close()
    return n


def _prediction_columns(model: LinearModel, batch) -> dict[str, np.ndarray]:
    cols = dict(batch.ids)
    cols["prediction"] = model.predict(batch.F)
    if hasattr(model, "std"):
        cols["std"] = model.std(batch.F)
    return cols


def _predict_pass(data, model) -> list[dict[str, np.ndarray]]:
    """The prediction columns of each batch of a slice (a pass function of ``map``)."""
    return [_prediction_columns(model, batch) for batch in data.batches(with_ids=True)]


def _evaluate_pass(data, model):
    """Metric accumulator (and the GP's NLPD sum) over a slice's rows: additive."""
    targets = model.targets
    if targets.task == "regression":
        acc = RegressionAccumulator()
    else:
        acc = ClassificationAccumulator(len(targets.classes))
    nlpd = 0.0
    for batch in data.batches():
        S = model.scores(batch.F)
        if targets.task == "regression":
            acc.update(batch.y, S[:, 0])
            if hasattr(model, "std"):
                y = np.asarray(batch.y, dtype=np.float64)
                nlpd += gaussian_nlpd_sum(y, S[:, 0], model.std(batch.F))
        else:
            acc.update(targets.index(batch.y), S.argmax(1))
    return acc, nlpd


def evaluate(
    model_path: str,
    test_path: str,
    *,
    progress: Progress | None = None,
    engine: str = "local",
    dask: Any = None,
) -> dict[str, Any]:
    """Metrics of a model on a store or raw data with the training label column (on a Dask
    cluster with ``engine="dask"``: the counts and sums of slices are added up)."""
    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    label = (meta.get("trained_on") or {}).get("label")
    t0 = time.perf_counter()
    data = open_data(test_path, encoder, model.normalized, label, require_label=True)
    targets = model.targets
    with passes_for(data, engine, dask, progress) as passes:
        acc, nlpd = passes.reduce(_evaluate_pass, model, title="evaluating")
    if acc.n == 0:
        raise InputError(f"{test_path}: no rows")
    out: dict[str, Any] = {"model": model.kind, "task": targets.task, "rows": acc.n}
    out.update(acc.result())
    if targets.task == "regression" and hasattr(model, "std"):
        out["nlpd"] = nlpd / acc.n
    q = encoder.quantizer
    out.update(
        {
            "features": encoder.n_features,
            "bits": q.bits_per_feature,
            "bits_per_sample": encoder.n_features * q.bits_per_feature,
            "quantizer": q.kind,
            "normalized": model.normalized,
            "seconds": time.perf_counter() - t0,
        }
    )
    return out
