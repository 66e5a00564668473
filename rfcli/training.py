"""Orchestration of train / predict / evaluate: passes over a store, hyperparameter
selection on a validation split, model files, metrics.  The learners' numerics live in
rfcli.learn; this module decides what to pass them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcli.errors import InputError, UsageError
from rfcli.io.models_io import load_model, save_model
from rfcli.io.store import FeatureStore
from rfcli.learn.data import StoreData, open_data, validation_mask
from rfcli.learn.linear import LinearModel
from rfcli.learn.ridge import RidgeModel, RidgeStats, alpha_candidates
from rfcli.learn.svm import LOSSES, LinearSVM, fit_svm
from rfcli.learn.targets import Targets
from rfcli.memory import check_fits, learner_need, physical_memory
from rfcli.metrics import RegressionAccumulator, classification_metrics, gaussian_nlpd_sum
from rfcli.progress import NullProgress, Progress

MODELS = ("svm", "krr")
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


@dataclass
class TrainSettings:
    model: str = "svm"
    normalized: bool = False
    C: float | str = "auto"
    alpha: float | str = "auto"
    loss: str = "squared_hinge"
    task: str | None = None  # krr: classification (one-hot) or regression; default from the label
    val_fraction: float = 0.2
    seed: int = 0
    max_iter: int = 1000
    tol: float = 1e-7
    cache_bytes: int = 256 << 20
    memory: int | None = None  # budget in bytes (default: physical memory)
    engine: str = "local"  # or "dask": ridge statistics reduced on a Dask cluster
    dask: Any = None  # rfcli.dask_engine.DaskSettings


@dataclass
class TrainResult:
    model: LinearModel
    report: dict[str, Any]
    seconds: float


def _check(settings: TrainSettings) -> None:
    if settings.engine not in ("local", "dask"):
        raise UsageError(f"--engine must be local or dask, got {settings.engine!r}")
    if settings.engine == "dask" and settings.model != "krr":
        raise UsageError(f"--engine dask trains krr so far; train {settings.model} locally")
    if settings.model not in MODELS:
        raise UsageError(f"--model must be one of {', '.join(MODELS)}")
    if not 0 <= settings.val_fraction < 1:
        raise UsageError(f"--val-fraction must be in [0, 1), got {settings.val_fraction}")
    if settings.loss not in LOSSES:
        raise UsageError(f"--loss must be one of {', '.join(LOSSES)}")
    for name in ("C", "alpha"):
        v = getattr(settings, name)
        if v != "auto" and not (isinstance(v, int | float) and v > 0 and np.isfinite(v)):
            raise UsageError(
                f"{'-C' if name == 'C' else '--alpha'} must be a positive number or 'auto', "
                f"got {v!r}"
            )


def train(
    store_path: str,
    output: str | None,
    settings: TrainSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> TrainResult:
    """Train an SVM or KRR model on a store; write it to ``output`` (if given)."""
    settings = settings or TrainSettings()
    _check(settings)
    progress = progress or NullProgress()
    if output is not None:
        import os

        if os.path.exists(output) and not overwrite:
            from rfcli.errors import OutputError

            raise OutputError(f"{output}: already exists (use --overwrite to replace it)")
    t0 = time.perf_counter()
    store = FeatureStore(store_path)
    # the SVM makes hundreds of passes: keep its packed codes in memory if they fit the
    # budget; ridge makes one or two and reads the store each time (flat memory)
    cache = settings.cache_bytes if settings.model == "svm" else 0
    budget = settings.memory or physical_memory()
    m = store.n_features
    # decoded chunks of about 16 MiB of float32 features (fewer rows when --memory is small)
    chunk_rows = max(256, min(8192, store.chunk_rows, (16 << 20) // (4 * m), budget // (48 * m)))
    data = StoreData(store, settings.normalized, chunk_rows=chunk_rows, cache_bytes=cache)
    label_kind = (store.label_info or {}).get("kind")
    if settings.model == "svm" and label_kind == "float" and settings.task != "classification":
        raise UsageError(
            "the SVM is a classifier and the label is real-valued: use --model krr for regression "
            "(or --task classification if the values are class codes)"
        )
    with progress.task("reading labels", store.n_rows) as task:

        def label_chunks():  # consumed lazily: only the distinct values are kept
            for _, y in data.labels():
                task.advance(len(y))
                yield y

        targets = Targets.fit(label_chunks(), settings.task, label_kind)
    if settings.model == "svm" and targets.task != "classification":
        raise UsageError("the SVM is a classifier; use --model krr for a regression target")
    need = learner_need(settings.model, m, targets.n_outputs) + 3 * 4 * chunk_rows * m
    check_fits(
        f"{settings.model.upper()} with m = {m} features",
        need,
        budget,
        "use a store with fewer features" + (" or raise --memory" if settings.memory else ""),
    )
    if settings.model == "svm" and settings.memory:
        data.set_cache_budget(max(0, min(cache, budget - need)))
    if settings.model == "krr":
        model, report = _train_ridge(data, targets, settings, progress)
    else:
        model, report = _train_svm(data, targets, settings, progress)
    report.update({"rows": store.n_rows, "features": store.n_features, "bits": store.bits})
    secs = time.perf_counter() - t0
    report["seconds"] = secs
    model.info = report
    if output is not None:
        save_model(
            output,
            model,
            data.encoder,
            {
                "trained_on": {
                    "store": store_path,
                    "fingerprint": store.meta.get("fingerprint"),
                    "label": data.label_name,
                }
            },
            overwrite=overwrite,
        )
    return TrainResult(model, report, secs)


# -- shared pass -----------------------------------------------------------------------------
def _split_stats(
    data: StoreData, k: int, targets_of, tune: bool, s: TrainSettings, progress, title
):
    """One pass of least-squares statistics (Phi'Phi, Phi'Y, ...), kept separately for the
    training and validation rows when ``tune`` (else everything goes to the first)."""
    m = data.encoder.n_features
    fit, val = RidgeStats(m, k), RidgeStats(m, k)
    with progress.task(title, data.n_rows) as task:
        for batch in data.batches():
            Y = targets_of(batch.y)
            if tune:
                vm = validation_mask(s.seed, batch.row0, len(batch), s.val_fraction)
                fit.update(batch.F[~vm], Y[~vm])
                val.update(batch.F[vm], Y[vm])
            else:
                fit.update(batch.F, Y)
            task.advance(len(batch))
    return fit, val


# -- ridge ----------------------------------------------------------------------------------
def _train_ridge(data: StoreData, targets: Targets, s: TrainSettings, progress: Progress):
    k = targets.n_outputs
    tune = s.alpha == "auto" and s.val_fraction > 0
    if s.engine == "dask":
        from rfcli.dask_engine import DaskSettings, ridge_stats_dask

        fit, val = ridge_stats_dask(data, targets, s, tune, s.dask or DaskSettings(), progress)
    else:
        fit, val = _split_stats(data, k, targets.encode, tune, s, progress, "ridge: Phi'Phi")
    report: dict[str, Any] = {"model": "krr", "task": targets.task}
    if tune:
        Gc, FtYc = fit.centred()
        cands = alpha_candidates(Gc)
        sols = [fit.solve(a, Gc, FtYc) for a in cands]
        if targets.task == "regression":
            scores = [-val.sse(W, b) / max(val.n, 1) for W, b in sols]
            report["validation_mse"] = dict(
                zip(map(float, cands), (-x for x in scores), strict=True)
            )
        else:
            scores = _val_accuracy(data, targets, s, sols, progress)
            report["validation_accuracy"] = dict(zip(map(float, cands), scores, strict=True))
        alpha = float(cands[int(np.argmax(scores))])
        fit += val
    else:
        alpha = (
            float(s.alpha) if s.alpha != "auto" else float(alpha_candidates(fit.centred()[0])[4])
        )
    W, b = fit.solve(alpha)
    report.update({"alpha": alpha, "train_mse": fit.sse(W, b) / max(fit.n, 1) / k})
    return RidgeModel(targets, W, b, s.normalized), report


def _val_accuracy(data, targets, s, sols, progress) -> list[float]:
    """Validation accuracy of several (W, b) at once, in one pass over validation rows."""
    Wall = np.concatenate([W for W, _ in sols], axis=1).astype(np.float32)
    ball = np.concatenate([b for _, b in sols])
    k = targets.n_outputs
    correct = np.zeros(len(sols))
    n = 0
    with progress.task("validation", data.n_rows) as task:
        for batch in data.batches():
            vm = validation_mask(s.seed, batch.row0, len(batch), s.val_fraction)
            task.advance(len(batch))
            if not vm.any():
                continue
            S = (batch.F[vm] @ Wall).astype(np.float64) + ball
            truth = targets.index(batch.y[vm])
            pred = S.reshape(len(S), len(sols), k).argmax(axis=2)
            correct += (pred == truth[:, None]).sum(0)
            n += int(vm.sum())
    if n == 0:
        raise InputError(
            "the validation split is empty; use a larger --val-fraction or give --alpha/-C"
        )
    return list(correct / n)


# -- SVM ------------------------------------------------------------------------------------
def _train_svm(data: StoreData, targets: Targets, s: TrainSettings, progress: Progress):
    m = data.encoder.n_features
    K = len(targets.classes)
    k = 1 if K == 2 else K

    def pm(y):
        idx = targets.index(y)
        if k == 1:
            return np.where(idx == 1, 1.0, -1.0)[:, None]
        Y = -np.ones((len(idx), k))
        Y[np.arange(len(idx)), idx] = 1.0
        return Y

    def passes(which: str):
        def gen():
            for batch in data.batches():
                if which == "all":
                    yield batch.F, pm(batch.y)
                    continue
                vm = validation_mask(s.seed, batch.row0, len(batch), s.val_fraction)
                sel = ~vm if which == "train" else vm
                if sel.any():
                    yield batch.F[sel], pm(batch.y[sel])

        return gen

    report: dict[str, Any] = {"model": "svm", "task": "classification", "loss": s.loss}
    tune = s.C == "auto" and s.val_fraction > 0
    # one pass: the feature Gram matrices (train / validation rows) for the preconditioner
    fit_stats, val_stats = _split_stats(
        data, 1, lambda y: np.zeros((len(y), 1)), tune, s, progress, "svm: Gram matrix"
    )
    fitkw = dict(loss=s.loss, max_iter=s.max_iter, tol=s.tol)
    warm = None
    if tune:
        gram = _augmented_gram(fit_stats)
        val_acc = {}
        best = (-1.0, None, None)
        for C in C_GRID:
            with progress.task(f"svm C={C:g}", None):
                W, b, rep = fit_svm(passes("train"), m, k, C, warm=warm, gram=gram, **fitkw)
            warm = (W, b)
            correct = total = 0
            for F, Y in passes("val")():
                S = (F @ W.astype(np.float32)).astype(np.float64) + b
                pred = (S[:, 0] > 0).astype(int) if k == 1 else S.argmax(1)
                truth = (Y[:, 0] > 0).astype(int) if k == 1 else Y.argmax(1)
                correct += int((pred == truth).sum())
                total += len(F)
            if total == 0:
                raise InputError(
                    "the validation split is empty; use a larger --val-fraction or give -C"
                )
            val_acc[C] = correct / total
            if val_acc[C] > best[0]:
                best = (val_acc[C], C, (W, b))
        report["validation_accuracy"] = val_acc
        C, warm = best[1], best[2]
        fit_stats += val_stats
    else:
        C = float(s.C) if s.C != "auto" else 1.0
    with progress.task(f"svm C={C:g} (all rows)", None):
        W, b, rep = fit_svm(
            passes("all"), m, k, C, warm=warm, gram=_augmented_gram(fit_stats), **fitkw
        )
    report.update(rep)
    return LinearSVM(targets, W, b, s.normalized), report


def _augmented_gram(stats: RidgeStats) -> np.ndarray:
    """Gram matrix of [phi, 1]: [[Phi'Phi, Phi'1], [1'Phi, n]]."""
    m = len(stats.sF)
    G = np.empty((m + 1, m + 1))
    G[:m, :m] = stats.gram()
    G[:m, m] = G[m, :m] = stats.sF
    G[m, m] = stats.n
    return G


# -- predict / evaluate ----------------------------------------------------------------------
def predict(
    model_path: str,
    input_path: str,
    output: str,
    *,
    ids: list[str] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> int:
    """Predictions for a store or raw data, written to Parquet/CSV (``-`` = stdout)."""
    from rfcli.io.writers import TableWriter

    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    data = open_data(input_path, encoder, model.normalized, None, ids)
    writer = TableWriter(output, data.n_rows or 0, 0, overwrite=overwrite)
    n = 0
    try:
        with progress.task("predicting", data.n_rows) as task:
            for batch in data.batches(with_ids=True):
                cols = dict(batch.ids)
                cols["prediction"] = model.predict(batch.F)
                if hasattr(model, "std"):
                    cols["std"] = model.std(batch.F)
                writer.write(None, cols)
                n += len(batch)
                task.advance(len(batch))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return n


def evaluate(
    model_path: str, test_path: str, *, progress: Progress | None = None
) -> dict[str, Any]:
    """Metrics of a model on a store or raw data with the training label column."""
    model, encoder, meta = load_model(model_path)
    progress = progress or NullProgress()
    label = (meta.get("trained_on") or {}).get("label")
    t0 = time.perf_counter()
    data = open_data(test_path, encoder, model.normalized, label, require_label=True)
    targets = model.targets
    reg = RegressionAccumulator()
    truths, preds = [], []
    n = 0
    nlpd = 0.0
    with progress.task("evaluating", data.n_rows) as task:
        for batch in data.batches():
            S = model.scores(batch.F)
            if targets.task == "regression":
                reg.update(batch.y, S[:, 0])
                if hasattr(model, "std"):
                    nlpd += gaussian_nlpd_sum(
                        np.asarray(batch.y, dtype=np.float64), S[:, 0], model.std(batch.F)
                    )
            else:
                truths.append(targets.index(batch.y))
                preds.append(S.argmax(1))
            n += len(batch)
            task.advance(len(batch))
    if n == 0:
        raise InputError(f"{test_path}: no rows")
    out: dict[str, Any] = {"model": model.kind, "task": targets.task, "rows": n}
    if targets.task == "regression":
        out.update(reg.result())
        if hasattr(model, "std"):
            out["nlpd"] = nlpd / n
    else:
        out.update(
            classification_metrics(
                np.concatenate(truths), np.concatenate(preds), len(targets.classes)
            )
        )
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
