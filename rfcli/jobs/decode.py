"""The decode job (``rfcli decode``): a store's decoded features written to a table."""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

from rfcli.io.store import FeatureStore
from rfcli.io.writers import TableWriter
from rfcli.jobs.resources import Resources
from rfcli.progress import NullProgress, Progress


def decode(
    store_path: str,
    output: str,
    *,
    normalized: bool = False,
    overwrite: bool = False,
    threads: int | None = None,
    memory: int | None = None,
    progress: Progress | None = None,
) -> int:
    """Write a store's decoded features to .npy, Parquet or CSV.

    Features are scaled so that ``F(x) . F(y)`` estimates the kernel; Parquet and CSV
    also carry the store's label and id columns.  Chunks are decoded on ``threads``
    threads and written in row order (the output is the same for any number).

    Parameters
    ----------
    store_path : str
        The feature store (path or URL).
    output : str
        ``OUT.npy``, ``OUT.parquet``, ``OUT.csv``, or ``"-"`` for CSV on stdout.
    normalized : bool, default=False
        Unit rows ``Q(z) / ||Q(z)||`` (the normalized estimator).
    overwrite : bool, default=False
        Replace an existing ``output``.
    threads : int or None, default=None
        Threads decoding chunks (default: the available cores, at most 8).
    memory : int or None, default=None
        Budget in bytes for the chunks in flight (default: the store's chunks, whatever
        the machine has).
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    int
        The rows written.

    Raises
    ------
    StoreError
        Not a complete feature store, or a damaged one.
    OutputError
        ``output`` exists (without ``overwrite``), or has an unknown extension.
    UsageError
        ``memory`` too small for the smallest chunks.
    """
    from rfcli.threads import default_threads, one_blas_thread

    res = Resources(threads=threads, memory=memory)
    store = FeatureStore(store_path)
    enc = store.encoder
    step = res.batch_rows(enc) or store.chunk_rows
    n_threads = res.threads or default_threads()
    progress = progress or NullProgress()
    writer = TableWriter(output, store.n_rows, store.n_features, overwrite=overwrite)
    label = (store.label_info or {}).get("name")

    def columns(row0: int, r1: int):
        chunk = next(store.iter_encoded(r1 - row0, row0, r1))
        F = enc.decode(chunk.packed, chunk.norms, chunk.row_scale, normalized=normalized)
        cols = dict(store.ids(row0, r1))
        if label:
            cols[label] = store.label_values(row0, r1)
        return F, cols

    ranges = [(r0, min(r0 + step, store.n_rows)) for r0 in range(0, store.n_rows, step)]
    try:
        with (one_blas_thread(), ThreadPoolExecutor(n_threads) as pool,
              progress.task("decoding", store.n_rows) as task):  # fmt: skip
            pending: deque = deque()
            for r0, r1 in ranges:  # at most threads + 1 chunks in flight, written in order
                pending.append(pool.submit(columns, r0, r1))
                if len(pending) > n_threads:
                    _write(writer, pending.popleft().result(), task)
            while pending:
                _write(writer, pending.popleft().result(), task)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return store.n_rows


def _write(writer: TableWriter, item, task) -> None:
    F, cols = item
    writer.write(F, cols)
    task.advance(len(F))
