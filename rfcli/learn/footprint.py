"""Memory footprints of the learners (``rfcli train``'s SVM and KRR): what a training run
holds besides its data, so that a job (train itself, or the bits choice of an encode, which
must not choose a store the default train refuses) can check it against the budget before
any work."""

from __future__ import annotations

#: the folds of the default cross-validation choosing C / alpha (``rfcli train``)
CV_FOLDS = 5


def train_chunk_rows(store_chunk_rows: int, n_features: int, budget: int) -> int:
    """Rows per decoded chunk of the svm/krr passes over a store with chunks of
    ``store_chunk_rows`` rows: about 16 MiB of float32 features, fewer when the memory
    ``budget`` is small, at most a store chunk."""
    m = n_features
    return max(256, min(8192, store_chunk_rows, (16 << 20) // (4 * m), budget // (48 * m)))


def svm_columns(n_classes: int, multiclass: str, rows: int | None, m: int) -> tuple[int, bool]:
    """(columns, pairwise) of the default (squared-hinge) SVM that ``rfcli train`` runs on
    ``rows`` rows of m features of ``n_classes`` classes (rfcli.learn.dual_svm.svm_scheme)."""
    from rfcli.learn.dual_svm import svm_scheme
    from rfcli.learn.multiclass import Columns

    c = Columns(n_classes, svm_scheme(multiclass, "squared_hinge", rows, m))
    return c.n, c.pairwise


def learner_need(model: str, m: int, k: int, folds: int = 0, rows: int | None = None,
                 chunk_rows: int = 0, pairwise: bool = False) -> int:  # fmt: skip
    """Fixed memory of a learner with m features and k outputs (float64 matrices), trained
    on ``rows`` rows (None: not known) read in decoded chunks of ``chunk_rows`` rows;
    ``pairwise``: the SVM's k columns are one-vs-one pairs.

    Primal (rows >= m): KRR keeps Phi'Phi plus a Cholesky copy and solves (about 4 m^2),
    and with ``folds``-fold cross-validation each fold's statistics and its eigenvectors
    (2 x folds more; measured, 12,000 rows, 5 folds: peak RSS 2.57 GiB at m = 4096 and 8.39
    GiB at m = 8192, 13.9 m^2 float64 between the two beside the buffers; the estimate
    before, folds + 2 more, was 1.5 GiB short at m = 8192); each fold's statistics buffer
    8192 float32 rows for their block product; the SVM keeps the Gram preconditioner and
    its factor (2 m^2) and the weight vectors of its k outputs (times the folds, solved
    together) with L-BFGS history, and one statistics buffer.  Three float32 copies of a
    decoded chunk.

    Dual (rows < m, rfcli.learn.dual): the rows' features (float32 while they are
    gathered, float64 centred: 12 bytes per value) and about six n x n float64 matrices
    (the kernel, a fold's centred block, its eigenvectors, the folds' held-out products,
    the refit's factor), plus the SVM's per-column arrays (one-vs-one: on about 4n/K rows
    a column, twice a pair's mean, with the pairs' kernel blocks, at most
    rfcli.learn.dual_svm.KEEP_BYTES, and its batches).  Measured: faithfuld (4,219
    rows, m = 16,384, 5-fold KRR) peaks at 1.33 GiB of RSS, where the primal estimate
    said 24.5 GiB (docs/learning.md, "KRR: one pass for every fold").

    >>> round(learner_need("krr", 16384, 1, 5, rows=4219) / 2**30, 2)
    1.57
    """
    # here, not at the top: an encode (which asks for the bits choice) loads no learner
    from rfcli.learn.dual import use_dual
    from rfcli.learn.dual_svm import BATCH_BYTES, KEEP_BYTES
    from rfcli.learn.ridge import RidgeStats

    if use_dual(rows, m):
        n = int(rows)
        if model == "svm" and pairwise:
            K = (1 + (1 + 8 * k) ** 0.5) / 2  # k = K (K - 1) / 2 pairs
            r = min(n, int(4 * n / K) + 1)
            cols = 8 * r * k * max(folds, 1) * 16 + min(KEEP_BYTES, 8 * k * r * r) + 4 * BATCH_BYTES
        elif model == "svm":
            cols = 8 * n * k * max(folds, 1) * 16
        else:
            cols = 8 * n * k * 4
        return 12 * n * m + 6 * 8 * n * n + cols + 8 * m * k * 2
    mm = 8 * m * m
    if model == "svm":
        need = 2 * mm + 8 * m * k * max(folds, 1) * 48
    else:
        need = (4 + 2 * folds) * mm + 8 * m * k * 4
    buffers = max(folds if model != "svm" else 1, 1) * RidgeStats.SUB_ROWS32 * (m + k) * 4
    return need + 3 * 4 * chunk_rows * m + buffers


def default_train_fits(memory: int | None, store_chunk_rows: int | None):
    """``fits(m, task, k, rows)`` for ``bits='auto'``: None when the default ``train`` of
    the task (the SVM for classes, KRR for a real-valued label; C / alpha by its default
    cross-validation) fits m features of k outputs on ``rows`` rows in ``memory`` bytes
    (None: the machine's physical memory, as ``train`` without ``memory``), else why not.
    The need is ``train``'s own estimate (:func:`learner_need`), which refuses the same
    store."""
    from rfcli.memory import human, physical_memory

    budget = physical_memory() if memory is None else memory
    where = "the memory budget" if memory is not None else "this machine's memory"

    def fits(m: int, task: str, k: int, rows: int | None) -> str | None:
        model = "svm" if task == "classification" else "krr"
        # the default store chunk (None): train reads at most 8192 rows a chunk anyway
        chunk = train_chunk_rows(store_chunk_rows or 8192, m, budget)
        pairwise = False
        if model == "svm":  # train's default scheme on these rows (k: classes, or 1 for two)
            k, pairwise = svm_columns(max(k, 2), "auto", rows, m)
        need = learner_need(model, m, k, CV_FOLDS, rows=rows, chunk_rows=chunk, pairwise=pairwise)
        if need <= budget:
            return None
        return (
            f"{model.upper()} on m = {m} needs about {human(need)}, over {where} of {human(budget)}"
        )

    return fits
