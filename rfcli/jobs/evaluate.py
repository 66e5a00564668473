"""The evaluate job (``rfcli evaluate``): a model's metrics on labelled data (a store or raw
input), as additive per-slice counts and sums on either engine."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rfcli.engines import open_engine
from rfcli.errors import InputError
from rfcli.learn.data import open_data
from rfcli.learn.model_file import load_model
from rfcli.metrics import ClassificationAccumulator, RegressionAccumulator, gaussian_nlpd_sum
from rfcli.progress import NullProgress, Progress


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
    dask=None,
) -> dict[str, Any]:
    """Metrics of a model on a store or raw data with the training label column (on a Dask
    cluster with ``engine="dask"``: the counts and sums of slices are added up)."""
    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    label = (meta.get("trained_on") or {}).get("label")
    t0 = time.perf_counter()
    data = open_data(test_path, encoder, model.normalized, label, require_label=True)
    targets = model.targets
    with open_engine(engine, dask, progress) as eng:
        acc, nlpd = eng.passes(data).reduce(_evaluate_pass, model, title="evaluating")
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
