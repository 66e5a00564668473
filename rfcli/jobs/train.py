"""The train job for svm and krr (``rfcli train``): passes over a store, model selection by
k-fold cross-validation, model files.  The learners' numerics live in rfcli.learn; this
module decides what to pass them.  GP regression: rfcli.jobs.train_gpr; using a model:
rfcli.jobs.predict and rfcli.jobs.evaluate.

Model selection (C or alpha ``"auto"``): :mod:`rfcli.learn.selection`; this module
chooses the grids and the learners' solvers it runs."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rfcli.constraints import Boolean, Interval, Null, Options, Rule, Validated, settings_check
from rfcli.errors import UsageError
from rfcli.io import location
from rfcli.io.encoded import EncodedInput
from rfcli.io.readers import ReadSettings, attach_label, open_source
from rfcli.io.store import FeatureStore
from rfcli.jobs.encode import EncodeSettings, fit_on_source, for_engine
from rfcli.jobs.passes import PassCount
from rfcli.jobs.resources import Resources
from rfcli.jobs.result import TrainResult, check_one_output, check_output, warn_if_not_converged
from rfcli.learn import dual, dual_svm, selection
from rfcli.learn.data import StoreData, default_cache_bytes
from rfcli.learn.footprint import CV_FOLDS, learner_need, train_chunk_rows
from rfcli.learn.multiclass import TRAIN_SCHEMES, Columns
from rfcli.learn.ridge import RidgeModel, alpha_candidates, alpha_floor
from rfcli.learn.svm import LOSSES, LinearSVM, fit_svm
from rfcli.learn.targets import Outputs, Targets
from rfcli.memory import check_fits
from rfcli.progress import NullProgress, Progress

MODELS = ("svm", "krr")
#: the SVM's C candidates (extended by decades at the edges, see MAX_EXTENSIONS)
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
#: C when it is not selected (C "auto" and cv_folds < 2)
DEFAULT_C = 1.0
#: alpha when it is not selected: this entry of rfcli.learn.ridge.alpha_candidates
DEFAULT_ALPHA_INDEX = 4
#: the SVM's cross-validation fits stop at this multiple of the refit's tolerance (their
#: mean held-out accuracies moved by at most 0.0003 against 1e-7 on optdigits)
CV_TOL_FACTOR = 100.0


#: the smallest SVM ``tol``: the unit roundoff of float32 (2^-24).  The passes compute the
#: scores from float32 features and weights, so the objective carries relative rounding
#: errors of that size and a smaller relative reduction is noise: tol 1e-9 cost 67 passes for
#: a 2.5e-8 change of the objective, against 24 at 1e-7 (issue 24).  Refused, not clamped.
TOL_FLOOR = 2.0**-24

_POSITIVE = Interval("real", 0, lo_open=True)


@dataclass
class TrainSettings(Validated):
    """What ``rfcli train --model svm|krr`` asks for: the modelling choices of a linear
    model on a store's features (never the machine's resources: those are keywords of
    :func:`train`).  :meth:`validate` checks every field against ``_parameter_constraints``
    (rfcli.constraints) before any work.

    Parameters
    ----------
    model : {"svm", "krr"}, default="svm"
        A linear SVM or kernel ridge regression.
    normalized : bool, default=False
        Train on unit feature rows (Li & Li's normalized estimator).
    C : float or "auto", default="auto"
        svm: the penalty; "auto": chosen by ``cv_folds``-fold cross-validation.
    alpha : float or "auto", default="auto"
        krr: the ridge; "auto": chosen by cross-validation from one pass's statistics.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        svm: the loss.
    multiclass : {"auto", "ovr", "ovo"}, default="auto"
        svm with more than two classes: one-vs-rest (K problems, the largest score wins)
        or one-vs-one (K (K - 1) / 2 problems on two classes' rows each, decided by their
        votes; ties: the larger summed decision value; docs/learning.md, Multi-class);
        "auto": one-vs-one where the SVM trains in the dual (fewer rows than features),
        one-vs-rest otherwise.  Two classes are one problem either way.
    task : {"classification", "regression"} or None, default=None
        krr: one-hot classification or regression (None: from the label's type).
    cv_folds : int, default=5
        Folds choosing C / alpha "auto" (0 or 1: no selection, C = 1, the middle alpha).
    seed : int, default=0
        The folds' hash.
    max_iter : int, default=1000
        svm: L-BFGS-B iterations at most.
    tol : float, default=1e-7
        svm: L-BFGS-B's relative objective reduction at which it stops; at least 2^-24
        (the scores are float32).
    cache_bytes : int or None, default=None
        svm: the rows kept in memory between passes (decoded features if they fit, else
        the packed codes); None: min(2 GiB, physical memory / 4); 0: every pass reads the
        store.

    Examples
    --------
    >>> TrainSettings(model="krr", alpha=0.1).validate().model
    'krr'
    """

    model: str = "svm"
    normalized: bool = False
    C: float | str = "auto"
    alpha: float | str = "auto"
    loss: str = "squared_hinge"
    multiclass: str = "auto"  # svm: one-vs-rest / one-vs-one columns (rfcli.learn.multiclass)
    task: str | None = None  # krr: classification (one-hot) or regression; default from the label
    cv_folds: int = (
        CV_FOLDS  # folds choosing C / alpha "auto"; 0 or 1: no selection (C = 1, middle alpha)
    )
    seed: int = 0  # the folds' hash
    max_iter: int = 1000
    tol: float = 1e-7  # svm: L-BFGS-B's relative objective reduction; at least TOL_FLOOR
    #: svm: the rows kept in memory between passes (decoded features if they fit, else the
    #: packed codes); None: min(2 GiB, physical memory / 4); 0: every pass reads the store
    cache_bytes: int | None = None

    _parameter_constraints = {
        "model": [Options(*MODELS)],
        "normalized": [Boolean()],
        "C": [_POSITIVE, Options("auto")],
        "alpha": [_POSITIVE, Options("auto")],
        "loss": [Options(*LOSSES)],
        "multiclass": [Options(*TRAIN_SCHEMES)],
        "task": [Null(), Options("classification", "regression")],
        "cv_folds": [Interval("int", 0)],
        "seed": [Interval("int", 0)],
        "max_iter": [Interval("int", 1)],
        "tol": [_POSITIVE],
        "cache_bytes": [Null(), Interval("int", 0)],
    }
    _rules = (
        Rule(("tol",), lambda tol: tol >= TOL_FLOOR,
             lambda n, tol: f"{n('tol')} must be >= {TOL_FLOOR:.3g}, got {tol:g}: the scores "
             "are float32, whose rounding (2^-24 relative) hides smaller reductions of the "
             "objective"),
        Rule(("model", "task"), lambda model, task: model != "svm" or task != "regression",
             lambda n, model, task: f"{n('task')} {task} needs {n('model')} krr: the SVM is "
             "a classifier"),
    )  # fmt: skip


def train(
    store_path,
    output: str | None = None,
    settings: TrainSettings | None = None,
    read: ReadSettings | None = None,
    *,
    encode: EncodeSettings | None = None,
    y=None,
    overwrite: bool = False,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> TrainResult:
    """Train an SVM or KRR model on a store, or on raw input encoded on the fly.

    Raw input is fitted an encoder as :func:`rfcli.encode` fits it, and every pass encodes
    the rows again or keeps them in memory as the passes over the store that ``encode``
    would write keep that store's (:class:`rfcli.io.encoded.EncodedInput`): the model is
    the one ``encode`` + ``train`` give, and the result carries the encoder.

    Parameters
    ----------
    store_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        A feature store (path or URL), or raw input: a Parquet path or in-memory data
        with its label column ``read.label`` (or the label ``y`` given apart).
    output : str or None, default=None
        The model file to write (``.npz``); None: nothing is written.
    settings : TrainSettings or None, default=None
        The model and its selection (``model``, ``C``, ``alpha``, folds, tolerances).
    read : ReadSettings or None, default=None
        How raw input is read (label, columns, ``on_nan``); refused with a store.
    encode : EncodeSettings or None, default=None
        The encoder to fit on raw input (default: ``EncodeSettings()``).
    y : array-like or None, default=None
        Raw input's label given apart (2-D: several krr regression outputs, which a model
        file cannot hold).
    overwrite : bool, default=False
        Replace an existing ``output``.
    threads : int or None, default=None
        Worker threads of the local engine (default: the available cores, at most 8); the
        model is the same for any number.
    memory : int or None, default=None
        Budget in bytes for the learner's arrays and the SVM's row cache (default:
        physical memory); a model whose m x m matrices do not fit is refused.
    engine : {"local", "dask"}, default="local"
        Where the passes over a store run (raw input: the local engine only).
    dask : DaskSettings or None, default=None
        The cluster of ``engine="dask"`` (default: a local one).
    progress : Progress or None, default=None
        Progress reporting (default: none).

    Returns
    -------
    TrainResult
        The model, its report (chosen C or alpha, cross-validation scores, passes,
        time), the encoder and what it was trained on; ``save(path)`` writes it.

    Raises
    ------
    UsageError
        A bad setting or combination (named by its parameter), a model that does not
        fit ``memory``.
    InputError
        Unreadable input, a missing label, labels the model cannot learn from.
    OutputError
        ``output`` exists (without ``overwrite``) or cannot be written.
    """
    settings = settings_check(settings, TrainSettings, "settings")
    read = None if read is None else settings_check(read, ReadSettings, "read")
    encode = None if encode is None else settings_check(encode, EncodeSettings, "encode")
    res = Resources(threads=threads, memory=memory, engine=engine, dask=dask)
    progress = progress or NullProgress()
    check_output(output, overwrite)
    t0 = time.perf_counter()
    store, trained_on = _training_store(store_path, output, read, encode, y, res, progress)
    try:
        return _train_store(store, trained_on, output, settings, res, overwrite=overwrite,
                            progress=progress, t0=t0)  # fmt: skip
    finally:
        if isinstance(store, EncodedInput):
            store.source.close()


def _training_store(data, output, read, encode, y, res: Resources, progress):
    """The store to train on, or raw input as one (:class:`EncodedInput`, its encoder
    fitted now), and what the model file records it as."""
    store = location.is_store(data)
    if store or (location.is_path(data) and encode is None and y is None and read is None):
        if read is not None:
            raise UsageError("read is for raw input: a store's columns and label are fixed")
        if encode is not None or y is not None:
            raise UsageError(
                "encode and y are for raw input: a store is encoded already, with its label"
            )
        path = os.fspath(data)  # not a store: FeatureStore says what it is
        return FeatureStore(path), {"store": path}
    if res.engine != "local":
        raise UsageError(
            "training on raw input encodes it in this process: use the local engine, or "
            "encode a store first (rfcli.encode) and train on it with the dask engine"
        )
    data, read = attach_label(data, y, read or ReadSettings())
    if read.label is None:
        raise UsageError("training on raw input needs its label: read.label (a column) or y")
    encode = encode or EncodeSettings()
    with res.open(progress) as eng:
        source = open_source(for_engine(eng, data), read.fmt, delimiter=read.delimiter)
        if output is not None:  # refused before any pass
            check_one_output(getattr(source, "widths", {}).get(read.label, 1))
        encoder, sel = fit_on_source(eng, source, encode, read)
    store = EncodedInput(source, sel, encoder, chunk_rows=encode.store_chunk_rows,
                         on_nan=read.on_nan)  # fmt: skip
    return store, {"input": source.path}


def _train_store(store, trained_on, output, settings: TrainSettings, res: Resources, *,
                 overwrite: bool, progress: Progress, t0: float) -> TrainResult:  # fmt: skip
    svm = settings.model == "svm"
    budget = res.budget
    m = store.n_features
    chunk_rows = train_chunk_rows(store.chunk_rows, m, budget)
    data = StoreData(store, settings.normalized, chunk_rows=chunk_rows, cache_bytes=0)
    targets = _read_targets(data, settings, progress)
    if svm:  # the scheme trained ("auto": by the solver, which the rows and features fix)
        scheme = dual_svm.svm_scheme(settings.multiclass, settings.loss, store.n_rows, m)
        settings = replace(settings, multiclass=scheme)
    columns = Columns(targets.n_outputs, settings.multiclass) if svm else None
    k = targets.n_outputs if not svm else columns.n
    folds = _n_folds(settings)
    dual_rows = store.n_rows if not svm or settings.loss == "squared_hinge" else None
    need = learner_need(settings.model, m, k, folds, rows=dual_rows, chunk_rows=chunk_rows,
                        pairwise=svm and columns.pairwise)  # fmt: skip
    fewer = "a store with fewer features" if "store" in trained_on else "fewer features"
    check_fits(
        f"{settings.model.upper()} with m = {m} features",
        need,
        budget,
        f"use {fewer}" + (" or raise memory" if res.memory else ""),
    )
    if svm:
        # the SVM makes hundreds of passes: keep its rows in memory if the budget allows
        # (decoded features, else packed codes); ridge makes one to three passes and reads
        # the store each time (flat memory)
        cache = default_cache_bytes() if settings.cache_bytes is None else settings.cache_bytes
        if res.memory:
            cache = max(0, min(cache, budget - need))
        data.set_cache_budget(cache, cache)
    with res.open(progress) as eng:
        passes = eng.passes(data, cache=svm)
        if settings.model == "krr":
            model, report = _train_ridge(passes, targets, settings, progress)
        else:
            model, report = _train_svm(passes, targets, settings, progress)
    if svm:
        report["cache"] = _cache_report(data, eng.name)
        warn_if_not_converged(report, f"the SVM (C={report.get('C', settings.C)})")
    report.update({"rows": store.n_rows, "features": store.n_features, "bits": store.bits})
    secs = time.perf_counter() - t0
    report["seconds"] = secs
    model.info = report
    trained_on.update(fingerprint=store.meta.get("fingerprint"), label=data.label_name)
    result = TrainResult(model, report, secs, data.encoder, trained_on)
    if output is not None:
        result.save(output, overwrite=overwrite)
    return result


def _read_targets(data: StoreData, settings: TrainSettings, progress: Progress) -> Targets:
    """The training targets (classes or outputs) from one pass over the store's labels."""
    store = data.store
    label_kind = (store.label_info or {}).get("kind")
    outputs = (store.label_info or {}).get("outputs")
    if outputs is not None:  # a 2-D label of in-memory input
        if settings.model != "krr" or settings.task == "classification":
            raise UsageError(
                f"a label of {outputs} columns is {outputs} regression outputs: model krr"
            )
        return Outputs(outputs)
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


def _n_folds(settings: TrainSettings) -> int:
    """Folds of the cross-validation the settings ask for (0: no selection)."""
    auto = settings.C if settings.model == "svm" else settings.alpha
    return settings.cv_folds if auto == "auto" and settings.cv_folds >= 2 else 0


def _cache_report(data: StoreData, engine: str) -> dict[str, Any]:
    if engine != "local":  # the workers keep their slices' packed codes (rfcli.engines.dask)
        return {"kind": "packed", "bytes": data.packed_bytes, "where": f"{engine} workers"}
    return {"kind": data.cache_kind, "bytes": data.cache_size, "where": "this process"}


# -- ridge ----------------------------------------------------------------------------------
def _train_ridge(passes, targets: Targets, s: TrainSettings, progress: Progress):
    if dual.use_dual(passes.n_rows, passes.data.encoder.n_features):  # fewer rows than features
        return dual.train_ridge(passes, targets, s.seed, _n_folds(s), s.alpha,
                                DEFAULT_ALPHA_INDEX, s.normalized, progress)  # fmt: skip
    k = targets.n_outputs
    nf = _n_folds(s)
    what = f"Phi'Phi of {nf} folds" if nf else "Phi'Phi"
    shift = selection.first_target_shift(passes.data, targets)
    stats = passes.reduce(selection.fold_stats_pass, targets, s.seed, nf, shift,
                          title=f"krr: pass 1, {what}")  # fmt: skip
    total = stats[0]
    for st in stats[1:]:
        total = total + st
    report: dict[str, Any] = {"model": "krr", "task": targets.task}
    if nf:
        sizes = np.array([st.n for st in stats])
        selection.check_folds(sizes, total.n)
        sel = _ridge_select(passes, targets, s, stats, total, sizes, progress)
        alpha = sel["best"]
        cv = selection.cv_report("alpha", "mse" if targets.task == "regression" else "accuracy", nf,
                        sizes, sel)  # fmt: skip
        report["cv"] = cv
        key = "validation_mse" if targets.task == "regression" else "validation_accuracy"
        report[key] = cv["mean"]
    elif s.alpha != "auto":
        alpha = float(s.alpha)
    else:
        alpha = float(alpha_candidates(total, floored=False)[DEFAULT_ALPHA_INDEX])
    W, b = total.solve(alpha)  # (of the shifted targets)
    report.update({"alpha": alpha, "train_mse": total.sse(W, b) / max(total.n, 1) / k})
    if shift is not None:
        b = b + shift
    return RidgeModel(targets, W, b, s.normalized), report


def _ridge_select(passes, targets, s, stats, total, sizes, progress) -> dict[str, Any]:
    """alpha by cross-validation: every fold's solutions from the statistics of one pass;
    regression MSE from the held-out fold's statistics alone, classification accuracy
    from one pass scoring every (fold, alpha) at once (one more per grid extension)."""
    nf, k = len(stats), targets.n_outputs
    solvers = []
    with progress.task("krr: eigendecomposition per fold", nf, unit="folds") as task:
        for st in stats:
            solvers.append(selection.FoldSolver(total, st))
            task.advance(1)
    grid = alpha_candidates(total)
    scoring = [1]  # the data passes so far

    def evaluate(alphas: list[float]) -> dict[float, list[float]]:
        sols = [[sv.solve(a) for a in alphas] for sv in solvers]  # [fold][alpha]
        if targets.task == "regression":
            return {
                a: [stats[f].sse(*sols[f][j]) / (stats[f].n * k) for f in range(nf)]
                for j, a in enumerate(alphas)
            }
        Ws = np.stack([np.hstack([W for W, _ in sols[f]]) for f in range(nf)]).astype(np.float32)
        bs = np.stack([np.concatenate([b for _, b in sols[f]]) for f in range(nf)])
        scoring[0] += 1
        title = f"krr: pass {scoring[0]}, scoring {len(alphas)} alpha(s) on {nf} folds"
        correct = passes.reduce(selection.fold_correct_pass, targets, s.seed, nf, Ws, bs,
                                len(alphas), title=title)  # fmt: skip
        acc = correct / sizes[:, None]
        return {a: list(acc[:, j]) for j, a in enumerate(alphas)}

    regression = targets.task == "regression"
    return selection.grid_search(grid, evaluate, regression, prefer_larger=True, progress=progress,
                   title=f"krr: {nf}-fold cross-validation of alpha",
                   metric="mse" if regression else "accuracy",
                   lower_bound=alpha_floor(total))  # fmt: skip


# -- SVM ------------------------------------------------------------------------------------
def _train_svm(passes, targets: Targets, s: TrainSettings, progress: Progress):
    m = passes.data.encoder.n_features
    if dual_svm.svm_in_dual(s.loss, passes.n_rows, m):  # the squared hinge on fewer rows than m
        return dual_svm.train_svm(passes, targets, s.seed, _n_folds(s), s.C, C_GRID, DEFAULT_C,
                              s.max_iter, s.normalized, progress, s.multiclass)  # fmt: skip
    columns = Columns(len(targets.classes), s.multiclass)
    k = columns.n
    nf = _n_folds(s)
    n = passes.n_rows
    report: dict[str, Any] = {"model": "svm", "task": "classification", "loss": s.loss,
                              "multiclass": s.multiclass}  # fmt: skip
    # one pass: the feature Gram matrix, for the preconditioner
    (stats,) = passes.reduce(selection.fold_stats_pass, None, s.seed, 0,
                             title="svm: pass 1, Gram matrix")  # fmt: skip
    gram = selection.augmented_gram(stats)
    if columns.pairwise:  # a one-vs-one column sees its two classes' rows: 2/K of them on average
        gram = gram * (2.0 / columns.n_classes)
    fitkw = dict(loss=s.loss, max_iter=s.max_iter)
    counted = PassCount(1)
    # progress: iterations and objective per fit; rows per pass too when every pass reads
    # the store (no rows kept in memory)
    reads = getattr(passes.data, "cache_kind", "none") == "none"

    def fit(C, n_folds, warm, title):
        """One fit of the stacked problem (all folds' or all rows' classes) at C."""
        ncol = k * max(n_folds, 1)
        g = gram if n_folds < 2 else gram * (1.0 - 1.0 / n_folds)  # the folds' mean Gram
        made = PassCount()

        def one_pass(W32, b, C, delta):
            n_pass = made.add()
            return passes.reduce(selection.svm_pass, targets, columns, s.seed, n_folds, W32, b,
                                 C, s.loss, delta,
                                 title=f"pass {n_pass}" if reads else None)  # fmt: skip

        tol = s.tol * (CV_TOL_FACTOR if n_folds >= 2 else 1.0)
        W, b, rep = fit_svm(one_pass, m, ncol, C, warm=warm, gram=g, tol=tol,
                            progress=progress, title=title, **fitkw)  # fmt: skip
        counted.add(rep["passes"])
        return W, b, rep

    warm = None
    if nf:
        sizes = selection.fold_sizes(s.seed, n, nf)
        selection.check_folds(sizes, n)
        sel, warm = _svm_select(passes, targets, s, columns, nf, sizes, fit, counted, progress)
        C = sel["best"]
        cv = selection.cv_report("C", "accuracy", nf, sizes, sel)
        cv["passes"] = sel["passes"]
        report["cv"] = cv
        report["validation_accuracy"] = cv["mean"]
    else:
        C = float(s.C) if s.C != "auto" else DEFAULT_C
    W, b, rep = fit(C, 0, warm, f"svm C={C:g} (all rows)")
    report.update(rep)
    report["total_passes"] = counted.n
    pairs = columns.pairs if columns.pairwise else None
    return LinearSVM(targets, W, b, s.normalized, multiclass=s.multiclass, pairs=pairs), report


def _svm_select(passes, targets, s, columns, nf, sizes, fit, counted: PassCount, progress):
    """C by cross-validation: for each C (increasing, warm-started from the nearest C done),
    all folds' binary problems (``columns``) as one stacked problem; then one pass scores
    every fold's held-out rows by the columns' decision (votes for one-vs-one).  Returns
    the selection and the refit's warm start (the mean of the chosen C's fold
    solutions)."""
    m = passes.data.encoder.n_features
    k = columns.n
    sols: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    fit_passes: dict[float, int] = {}
    mean: dict[float, float] = {}

    def evaluate(Cs: list[float]) -> dict[float, list[float]]:
        out = {}
        for C in Cs:
            warm = selection.path_start(sols, C)
            W, b, rep = fit(C, nf, warm, f"svm C={C:g} ({nf}-fold cross-validation)")
            sols[C] = (W, b)
            fit_passes[C] = rep["passes"]
            Ws = W.reshape(m, nf, k).transpose(1, 0, 2).astype(np.float32)
            correct = passes.reduce(selection.fold_correct_pass, targets, s.seed, nf, Ws,
                                    b.reshape(nf, k), 1, columns, title=None)  # fmt: skip
            counted.add()
            out[C] = list(correct[:, 0] / sizes)
            mean[C] = float(np.mean(out[C]))
            # keep the solutions that can still be needed: the two at each end of the grid
            # (warm starts of an extension) and the best so far (the refit's warm start)
            done = sorted(sols)
            best = done[selection.best_index(np.array([mean[c] for c in done]), False, False)]
            for c in done[2:-2]:
                if c != best:
                    del sols[c]
        return out

    sel = selection.grid_search(C_GRID, evaluate, lower_is_better=False, prefer_larger=False,
                  progress=progress, title=f"svm: {nf}-fold cross-validation of C",
                  metric="accuracy", together=False)  # fmt: skip
    sel["passes"] = {C: fit_passes[C] for C in sel["values"]}
    W, b = sols[sel["best"]]
    warm = (W.reshape(m, nf, k).mean(axis=1), b.reshape(nf, k).mean(axis=0))
    return sel, warm
