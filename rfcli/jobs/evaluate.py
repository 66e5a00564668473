"""The evaluate job (``rfcli evaluate``): a model's metrics on labelled data (a store or raw
input: a path or in-memory data), as additive per-slice counts and sums on either engine."""

from __future__ import annotations

import time
from typing import Any

from rfcli.errors import InputError
from rfcli.io import location
from rfcli.io.arrays import unnamed_hint
from rfcli.io.readers import ReadSettings, attach_label, open_source
from rfcli.io.settings import check_on_nan
from rfcli.jobs.predict import open_model
from rfcli.jobs.resources import Resources
from rfcli.learn.data import RawData, open_data
from rfcli.metrics import ClassificationAccumulator, RegressionAccumulator, gaussian_nlpd_sum
from rfcli.progress import NullProgress, Progress


def _evaluate_pass(data, model, where: str = "the test data"):
    """Metric accumulator (and the GP's NLPD sum) over a slice's rows: additive.  Labels
    are compared as the model's label type (text that spells the model's integer classes,
    and so on; other kinds are refused, see :meth:`Targets.comparable`)."""
    targets = model.targets
    if targets.task == "regression":
        acc = RegressionAccumulator()
    else:
        acc = ClassificationAccumulator(len(targets.classes))
    nlpd = 0.0
    for batch in data.batches():
        S = model.scores(batch.F)
        if targets.task == "regression":
            y = targets.regression_values(batch.y, where)
            acc.update(y, S[:, 0])
            if hasattr(model, "std"):
                nlpd += gaussian_nlpd_sum(y, S[:, 0], model.std(batch.F))
        else:
            acc.update(targets.index(targets.comparable(batch.y, where)), S.argmax(1))
    return acc, nlpd


def evaluate(
    model_path,
    test_path,
    *,
    y=None,
    on_nan: str = "error",
    delimiter: str | None = None,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Metrics of a model (a model file, or a :class:`~rfcli.jobs.result.TrainResult`) on a
    store or raw data with the training label column: a path, or in-memory data (a 2-D
    NumPy array, a pandas DataFrame, a pyarrow Table) with that column or with the labels
    ``y`` given apart.  On a Dask cluster with ``engine="dask"``: the counts and sums of
    slices are added up.  ``on_nan``: rows of raw data with NaN/inf features: ``error``,
    ``zero``, or ``drop`` (local engine); ``delimiter``: of CSV input (default: a tab for
    .tsv/.tab names, else a comma).

    Parameters
    ----------
    model_path : str or TrainResult
        A model file, or a training result.
    test_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        A labelled store, or raw data with the model's columns (by name) and label.
    y : array-like or None, default=None
        The labels given apart.
    on_nan, delimiter
        As for :func:`rfcli.predict`.
    threads, memory, engine, dask
        The resources (rfcli.jobs.resources).
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    dict
        ``model``, ``task``, ``rows``, the metrics (accuracy and macro_f1, or mse, rmse,
        r2 and for a GP nlpd), ``features``, ``bits``, ``bits_per_sample``, ``quantizer``,
        ``normalized``, ``seconds``.

    Raises
    ------
    InputError
        Unreadable data, a missing label, labels of another kind, no rows.
    UsageError
        A bad option or resource.
    """
    res = Resources(threads=threads, memory=memory, engine=engine, dask=dask)
    check_on_nan(on_nan, engine)
    model, encoder, meta = open_model(model_path)
    progress = progress or NullProgress()
    rows = res.batch_rows(encoder)
    label = (meta.get("trained_on") or {}).get("label")
    if y is not None:
        test_path, read = attach_label(test_path, y, ReadSettings(label=label))
        label = read.label
    where = location.name(test_path)
    t0 = time.perf_counter()
    if location.is_store(test_path):
        data = open_data(test_path, encoder, model.normalized, label, require_label=True,
                         chunk_rows=rows)  # fmt: skip
    else:
        if label is None:
            what = location.name(model_path) if location.is_path(model_path) else "the model"
            raise InputError(f"{what}: the model does not record its label column")
        if not location.is_path(test_path):  # in-memory: the labels may be given apart
            test_path = open_source(test_path)
            if label not in test_path.names:
                raise InputError(f"{where}: no label column {label!r} (the model's label): give "
                                 f"the labels as y{unnamed_hint(test_path)}")  # fmt: skip
        data = RawData.open(test_path, encoder, model.normalized, label, chunk_rows=rows or 8192,
                            require_label=True, on_nan=on_nan, delimiter=delimiter)  # fmt: skip
    targets = model.targets
    with data, res.open(progress) as eng:
        acc, nlpd = eng.passes(data).reduce(
            _evaluate_pass, model, location.normalize(where), title="evaluating"
        )
    if acc.n == 0:
        raise InputError(f"{where}: no rows")
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
