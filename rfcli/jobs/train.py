"""The train job for svm and krr (``rfcli train``): passes over a store, hyperparameter
selection on a validation split, model files.  The learners' numerics live in rfcli.learn;
this module decides what to pass them.  GP regression: rfcli.jobs.train_gpr; using a model:
rfcli.jobs.predict and rfcli.jobs.evaluate."""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcli.engines import open_engine
from rfcli.errors import InputError, OutputError, ParameterTypeError, UsageError
from rfcli.io import location
from rfcli.io.store import FeatureStore
from rfcli.learn.data import StoreData, validation_mask
from rfcli.learn.linear import LinearModel
from rfcli.learn.model_file import save_model
from rfcli.learn.ridge import RidgeModel, RidgeStats, alpha_candidates
from rfcli.learn.svm import LOSSES, LinearSVM, fit_svm, loss_terms
from rfcli.learn.targets import Targets
from rfcli.memory import check_fits, learner_need, physical_memory
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


@dataclass
class TrainResult:
    """What a train job returns (svm, krr and gpr alike): the model, its training report
    (also stored in the model file) and the wall time."""

    model: LinearModel
    report: dict[str, Any]
    seconds: float


def check_output(output: str | None, overwrite: bool) -> None:
    """Refuse to replace an existing model file without ``overwrite``."""
    if output is not None and location.exists(output) and not overwrite:
        raise OutputError(f"{output}: already exists (set overwrite to replace it)")


def _check(settings: TrainSettings) -> None:
    if settings.model not in MODELS:
        raise UsageError(f"model must be one of {', '.join(MODELS)}, got {settings.model!r}")
    vf = settings.val_fraction
    if isinstance(vf, bool) or not isinstance(vf, numbers.Real):
        raise ParameterTypeError(f"val_fraction must be a number in [0, 1), got {vf!r}")
    if not 0 <= vf < 1:
        raise UsageError(f"val_fraction must be in [0, 1), got {vf}")
    if settings.loss not in LOSSES:
        raise UsageError(f"loss must be one of {', '.join(LOSSES)}, got {settings.loss!r}")
    for name in ("C", "alpha"):
        v = getattr(settings, name)
        if v == "auto":
            continue
        msg = f"{name} must be a positive number or 'auto', got {v!r}"
        if isinstance(v, bool) or not isinstance(v, str | numbers.Real):
            raise ParameterTypeError(msg)
        if isinstance(v, str) or not (v > 0 and np.isfinite(v)):
            raise UsageError(msg)


def train(
    store_path: str,
    output: str | None,
    settings: TrainSettings | None = None,
    *,
    overwrite: bool = False,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> TrainResult:
    """Train an SVM or KRR model on a store; write it to ``output`` (if given).
    ``engine="dask"`` runs the passes on a Dask cluster (``dask``: its
    :class:`~rfcli.engines.dask.DaskSettings`)."""
    settings = settings or TrainSettings()
    _check(settings)
    progress = progress or NullProgress()
    check_output(output, overwrite)
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
    targets = _read_targets(data, settings, progress)
    need = learner_need(settings.model, m, targets.n_outputs) + 3 * 4 * chunk_rows * m
    check_fits(
        f"{settings.model.upper()} with m = {m} features",
        need,
        budget,
        "use a store with fewer features" + (" or raise memory" if settings.memory else ""),
    )
    if settings.model == "svm" and settings.memory:
        data.set_cache_budget(max(0, min(cache, budget - need)))
    with open_engine(engine, dask, progress) as eng:
        passes = eng.passes(data, cache=settings.model == "svm")
        if settings.model == "krr":
            model, report = _train_ridge(passes, targets, settings)
        else:
            model, report = _train_svm(passes, targets, settings, progress)
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


def _read_targets(data: StoreData, settings: TrainSettings, progress: Progress) -> Targets:
    """The training targets (classes or outputs) from one pass over the store's labels."""
    store = data.store
    label_kind = (store.label_info or {}).get("kind")
    if settings.model == "svm" and label_kind == "float" and settings.task != "classification":
        raise UsageError(
            "the SVM is a classifier and the label is real-valued: use model krr for regression "
            "(or task classification if the values are class codes)"
        )
    with progress.task("reading labels", store.n_rows) as task:

        def label_chunks():  # consumed lazily: only the distinct values are kept
            for _, y in data.labels():
                task.advance(len(y))
                yield y

        targets = Targets.fit(label_chunks(), settings.task, label_kind)
    if settings.model == "svm" and targets.task != "classification":
        raise UsageError("the SVM is a classifier; use model krr for a regression target")
    return targets


# -- pass functions (run by an engine on all rows or on one slice; results are additive) ----
def _split_stats_pass(data, targets, tune: bool, seed: int, val_fraction: float):
    """Least-squares statistics (Phi'Phi, Phi'Y, ...), kept separately for the training and
    validation rows when ``tune`` (else everything goes to the first).  ``targets=None``:
    one zero column (the SVM's preconditioner needs only Phi'Phi)."""
    m = data.encoder.n_features
    k = targets.n_outputs if targets is not None else 1
    fit, val = RidgeStats(m, k), RidgeStats(m, k)
    for batch in data.batches():
        Y = targets.encode(batch.y) if targets is not None else np.zeros((len(batch), 1))
        if tune:
            vm = validation_mask(seed, batch.row0, len(batch), val_fraction)
            fit.update(batch.F[~vm], Y[~vm])
            val.update(batch.F[vm], Y[vm])
        else:
            fit.update(batch.F, Y)
    return fit, val


def _correct_pass(data, targets, W: np.ndarray, b: np.ndarray, n_sol: int, seed, val_fraction):
    """Validation rows predicted correctly by each of ``n_sol`` linear models stacked in
    ``W`` (m, n_sol k), ``b``; k = 1 is a binary SVM (class 1 when the score is positive).
    Returns (correct per model, validation rows)."""
    k = len(b) // n_sol
    correct = np.zeros(n_sol)
    n = 0
    for batch in data.batches():
        vm = validation_mask(seed, batch.row0, len(batch), val_fraction)
        if not vm.any():
            continue
        S = ((batch.F[vm] @ W).astype(np.float64) + b).reshape(-1, n_sol, k)
        pred = (S[:, :, 0] > 0).astype(int) if k == 1 else S.argmax(axis=2)
        correct += (pred == targets.index(batch.y[vm])[:, None]).sum(0)
        n += int(vm.sum())
    return correct, n


def _svm_pass(data, targets, which: str, seed, val_fraction, W32, b, C, loss, delta):
    """The SVM objective's loss sum and gradient over the rows of ``which`` (all, train)."""

    def rows():
        k = W32.shape[1]
        for batch in data.batches():
            F, y = batch.F, batch.y
            if which == "train":
                sel = ~validation_mask(seed, batch.row0, len(batch), val_fraction)
                if not sel.any():
                    continue
                F, y = F[sel], y[sel]
            idx = targets.index(y)
            if k == 1:
                yield F, np.where(idx == 1, 1.0, -1.0)[:, None]
            else:
                Y = -np.ones((len(idx), k))
                Y[np.arange(len(idx)), idx] = 1.0
                yield F, Y

    return loss_terms(rows(), W32, b, C, loss, delta)


# -- ridge ----------------------------------------------------------------------------------
def _train_ridge(passes, targets: Targets, s: TrainSettings):
    k = targets.n_outputs
    tune = s.alpha == "auto" and s.val_fraction > 0
    title = "ridge: Phi'Phi"
    fit, val = passes.reduce(_split_stats_pass, targets, tune, s.seed, s.val_fraction, title=title)
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
            scores = _val_accuracy(passes, targets, s, sols, "validation")
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


def _val_accuracy(passes, targets, s, sols, title, what="alpha/C") -> list[float]:
    """Validation accuracy of several (W, b) at once, in one pass over validation rows."""
    Wall = np.concatenate([W for W, _ in sols], axis=1).astype(np.float32)
    ball = np.concatenate([b for _, b in sols])
    correct, n = passes.reduce(
        _correct_pass, targets, Wall, ball, len(sols), s.seed, s.val_fraction, title=title
    )
    if n == 0:
        raise InputError(f"the validation split is empty; use a larger val_fraction or give {what}")
    return list(correct / n)


# -- SVM ------------------------------------------------------------------------------------
def _train_svm(passes, targets: Targets, s: TrainSettings, progress: Progress):
    m = passes.data.encoder.n_features
    K = len(targets.classes)
    k = 1 if K == 2 else K

    def objective(which, task):
        def one_pass(W32, b, C, delta):  # progress: rows read, summed over passes
            out = passes.reduce(
                _svm_pass, targets, which, s.seed, s.val_fraction, W32, b, C, s.loss, delta
            )
            task.advance(passes.n_rows)
            return out

        return one_pass

    report: dict[str, Any] = {"model": "svm", "task": "classification", "loss": s.loss}
    tune = s.C == "auto" and s.val_fraction > 0
    # one pass: the feature Gram matrices (train / validation rows) for the preconditioner
    fit_stats, val_stats = passes.reduce(
        _split_stats_pass, None, tune, s.seed, s.val_fraction, title="svm: Gram matrix"
    )
    fitkw = dict(loss=s.loss, max_iter=s.max_iter, tol=s.tol)
    warm = None
    if tune:
        gram = _augmented_gram(fit_stats)
        val_acc = {}
        best = (-1.0, None, None)
        for C in C_GRID:
            with progress.task(f"svm C={C:g}", None) as task:
                W, b, rep = fit_svm(objective("train", task), m, k, C, warm=warm, gram=gram,
                                    **fitkw)  # fmt: skip
            warm = (W, b)
            (acc,) = _val_accuracy(passes, targets, s, [(W, b)], None, "C")
            val_acc[C] = acc
            if acc > best[0]:
                best = (acc, C, (W, b))
        report["validation_accuracy"] = val_acc
        C, warm = best[1], best[2]
        fit_stats += val_stats
    else:
        C = float(s.C) if s.C != "auto" else 1.0
    with progress.task(f"svm C={C:g} (all rows)", None) as task:
        W, b, rep = fit_svm(
            objective("all", task), m, k, C, warm=warm, gram=_augmented_gram(fit_stats), **fitkw
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
