"""The Dask engine: encode, train, predict and evaluate across a cluster, with the local
engine's results.  Dask is an optional extra (``pip install rfcli[dask]``); nothing imports
it unless ``--engine dask`` is asked for.  With a running scheduler (maybe on other
machines) local paths are made absolute before they are sent to workers; a local cluster
shares this process's directory, so paths (and messages naming them) stay as given; URLs
(rfcli.io.location) are sent as they are.

Encode.  Everything data-dependent is fitted first, exactly as the local engine fits it
(column statistics in fixed 4096-row blocks, the hash row sample, the map's pass); the
label's classes are gathered in order of first appearance.  The client then creates the
partial store with every array at its final size, sends the encoder to the workers once,
and submits one task per range of whole store chunks.  A task reads its rows from the
Parquet input (only the row groups it needs), encodes them in the same global 256-row
blocks as the local engine and writes its own chunks; no two tasks touch one chunk.  Dask
retries a failed or lost task; the client writes the completion marker only after every
task succeeded.  The result is byte-identical to ``--engine local``.

Learners (:class:`DaskPasses`).  Every pass of a learner is a function of one slice of
rows returning an additive result (rfcli.engines.base); tasks apply it to slices of whole
store chunks (or of Parquet input) and a tree reduction sums the results on the cluster,
so the answer equals the local engine's up to the floating-point order of the sums.  The
SVM's slices keep their packed codes in the workers' memory between passes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rfcli.constraints import Interval, Null, Text, Validated, settings_check
from rfcli.encoder_fit import FIT_BLOCK
from rfcli.engines.base import Engine, add, batch_results
from rfcli.errors import InputError, UsageError
from rfcli.io import location
from rfcli.io.readers import iter_chunks, read_range
from rfcli.io.settings import check_on_nan
from rfcli.io.sources import ParquetSource
from rfcli.io.store import FeatureStore, RegionWriter
from rfcli.io.store.chunks import SAMPLE_ROWS
from rfcli.learn.data import RawData, StoreData
from rfcli.progress import NullProgress, Progress
from rfcli.threads import one_blas_thread

#: store chunks per encode task (tasks of about 64k-256k rows)
CHUNKS_PER_TASK = 4
#: rows per task when reading Parquet input (fit passes, raw input of train/predict)
SLICE_ROWS = 65536

PARQUET_ONLY = "the dask engine reads Parquet input (a file, a directory or a glob of files)"


@dataclass
class DaskSettings(Validated):
    """Where a Dask job runs (``--engine dask``; docs/dask.md).

    Parameters
    ----------
    scheduler : str or None, default=None
        Address of a running scheduler (``tcp://host:8786``); None: the environment's
        ``DASK_SCHEDULER_ADDRESS``, else a local cluster of ``workers`` processes.
    workers : int, default=2
        Processes of the local cluster.
    retries : int, default=2
        How often Dask retries a failed or lost task.
    """

    scheduler: str | None = None  # address of a running scheduler; None: a local cluster
    workers: int = 2  # processes of the local cluster
    retries: int = 2

    _parameter_constraints = {
        "scheduler": [Null(), Text()],
        "workers": [Interval("int", 1)],
        "retries": [Interval("int", 0)],
    }

    @property
    def address(self) -> str | None:
        """The scheduler to connect to: ``scheduler``, else ``DASK_SCHEDULER_ADDRESS``
        (None: start a local cluster)."""
        return self.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")

    def worker_path(self, path: str) -> str:
        """``path`` as workers must see it: absolute on a running (maybe remote) cluster.

        Parameters
        ----------
        path : str
            A local path or a URL (URLs are left as they are).

        Returns
        -------
        str
            The path to send to workers (relative paths kept for a local cluster, which
            shares this process's directory).
        """
        return location.absolute(path) if self.address else location.normalize(path)


def _client(ds: DaskSettings):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "the dask engine needs Dask: pip install 'rfcli[dask]' (dask[distributed])"
        ) from None
    address = ds.address
    if address:
        try:
            return Client(address, timeout="20s"), None
        except OSError as e:
            raise UsageError(f"cannot reach the Dask scheduler at {address} ({e})") from None
    cluster = LocalCluster(
        n_workers=ds.workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    return Client(cluster), cluster


def _encode_task(path, sel, encoder, tmp, start, stop, on_nan, chunk_rows) -> int:
    """Worker side: encode global rows ``start .. stop-1`` into the partial store."""
    src = ParquetSource(path)
    writer = RegionWriter(tmp)
    try:
        with one_blas_thread():  # a worker runs one task per thread
            rows = read_range(src, sel, start, stop, chunk_rows, on_nan, encoder.input_dtype)
            for ch in rows:
                writer.write(encoder.encode_chunk(ch.X, ch.row0), ch.label, ch.ids)
        writer.close()
    finally:
        src.close()
    return stop - start


def _chunk_task(path, sel, fn, args, start, stop, on_nan, chunk_rows):
    """Worker side of a chunk pass (:meth:`DaskEngine.chunk_pass`): ``fn`` over the rows
    ``start .. stop-1`` of the Parquet input."""
    src = ParquetSource(path)
    try:
        with one_blas_thread():
            return fn(read_range(src, sel, start, stop, chunk_rows, on_nan), start, *args)
    finally:
        src.close()


def _labels_task(path, label, start, stop, chunk_rows):
    """Worker side: the label's distinct values in rows ``start .. stop-1``, in order of
    first appearance (only the label column is read)."""
    src = ParquetSource(path)
    try:
        return _first_appearance(
            src.read_rows([label], a, min(a + chunk_rows, stop))[label]
            for a in range(start, stop, chunk_rows)
        )
    finally:
        src.close()


def _first_appearance(parts) -> list:
    """Distinct values in order of first appearance over an iterable of sequences."""
    seen: dict = {}
    for part in parts:
        for v in part:
            seen.setdefault(v, None)
    return list(seen)


def _wait_in_order(futures, progress, title, sizes):
    """Wait for ``futures``, with progress as tasks complete (by ``sizes``, rows per task;
    none without a title); the first failure in submission (row) order is raised, as the
    local engine would report it.  Returns the futures."""
    from distributed import as_completed, wait

    if title is not None:
        size_of = {f.key: s for f, s in zip(futures, sizes, strict=True)}
        with progress.task(title, sum(sizes)) as task:
            for fut in as_completed(futures):
                if fut.status == "finished":
                    task.advance(size_of[fut.key])
    wait(futures)
    for f in futures:
        if f.status == "error":
            f.result()
    return futures


def _in_order(futures, progress, title, sizes):
    """Results of ``futures`` in submission (row) order (see :func:`_wait_in_order`)."""
    return [f.result() for f in _wait_in_order(futures, progress, title, sizes)]


def _identity(x):
    return x


def _shared(client, obj):
    """``obj`` for many tasks, as the result of a task rather than scattered data: Dask's
    active memory manager keeps one replica of a result the waiting tasks no longer need,
    and scattered data whose last holder dies cannot be recovered (a killed worker then
    cancels the whole job); a task's result is recomputed from the scheduler's copy."""
    return client.submit(_identity, obj, pure=False)


#: rows per task of a chunk pass: SLICE_ROWS rounded to whole FIT_BLOCKs
CHUNK_PASS_ROWS = FIT_BLOCK * max(1, SLICE_ROWS // FIT_BLOCK)


def _ranges(n: int) -> list[tuple[int, int]]:
    """Row ranges of a chunk pass: CHUNK_PASS_ROWS rows, starting on FIT_BLOCK boundaries."""
    return [(a, min(a + CHUNK_PASS_ROWS, n)) for a in range(0, n, CHUNK_PASS_ROWS)]


def _label_classes(client, path, source, sel, read, dask, progress) -> list | None:
    """A category label's classes in order of first appearance (None otherwise)."""
    if sel.label is None or source.numeric.get(sel.label, True):
        return None
    ranges = _ranges(source.num_rows)
    chunk = min(read.chunk_rows, CHUNK_PASS_ROWS)
    futures = [
        client.submit(_labels_task, dask.worker_path(path), sel.label, a, b, chunk,
                      retries=dask.retries, pure=False)
        for a, b in ranges
    ]  # fmt: skip
    parts = _in_order(futures, progress, "label classes (dask)", [b - a for a, b in ranges])
    return _first_appearance(parts)


def _run_encode_tasks(client, path, sel, encoder, tmp, n, span, read, dask, progress):
    enc = _shared(client, encoder)
    chunk = min(read.chunk_rows, span)
    ranges = [(a, min(a + span, n)) for a in range(0, n, span)]
    futures = [
        client.submit(_encode_task, path, sel, enc, tmp, a, b, read.on_nan, chunk,
                      retries=dask.retries, pure=False)
        for a, b in ranges
    ]  # fmt: skip
    _in_order(futures, progress, "encoding (dask)", [b - a for a, b in ranges])


class DaskEngine(Engine):
    """The Dask engine (see the module docstring).  The cluster (or the connection to a
    running scheduler) is started when first needed and closed by :meth:`close`."""

    name = "dask"

    def __init__(self, dask: DaskSettings | None = None, progress: Progress | None = None):
        self.dask = settings_check(dask, DaskSettings, "dask")
        self.progress = progress or NullProgress()
        self._client = self._cluster = None

    @property
    def client(self):
        if self._client is None:
            self._client, self._cluster = _client(self.dask)
        return self._client

    def worker_path(self, path: str) -> str:
        return self.dask.worker_path(path)

    def check_source(self, source) -> None:
        if not isinstance(source, ParquetSource):
            raise UsageError(PARQUET_ONLY)

    def check_encode(self, read, resume: bool) -> None:
        if resume:
            raise UsageError("resume is for the local engine (a Dask encode is retried by Dask)")
        check_on_nan(read.on_nan, "dask")

    def chunk_pass(self, source, sel, read, fn, args: tuple, *, title: str) -> list:
        """One task per range of about SLICE_ROWS rows (reading only the row groups it
        needs); ``args`` travel to the workers once."""
        if not source.num_rows:
            raise InputError(f"{source.path}: no rows to encode (empty input)")
        client, dask = self.client, self.dask
        ranges = _ranges(source.num_rows)
        chunk = min(read.chunk_rows, CHUNK_PASS_ROWS)
        shared = _shared(client, args)
        futures = [
            client.submit(_chunk_task, dask.worker_path(source.path), sel, fn, shared, a, b,
                          read.on_nan, chunk, retries=dask.retries, pure=False)
            for a, b in ranges
        ]  # fmt: skip
        return _in_order(futures, self.progress, f"{title} (dask)", [b - a for a, b in ranges])

    def write_store(self, source, sel, read, encoder, writer) -> str:
        """The partial store is sized for every row, one task per range of whole store
        chunks writes its own chunks, the completion marker comes last."""
        progress = self.progress
        path, n = source.path, source.num_rows
        try:
            if not n:
                raise InputError(f"{path}: no rows to encode (empty input)")
            classes = _label_classes(self.client, path, source, sel, read, self.dask, progress)
            # the first rows decide label and id dtypes and the arrays' compression
            first = next(
                iter_chunks(source, sel, min(SAMPLE_ROWS, n), read.on_nan, encoder.input_dtype)
            )
            writer.preallocate(n, first, classes)
            span = writer.chunk_rows * CHUNKS_PER_TASK
            _run_encode_tasks(
                self.client, path, sel, encoder, writer.tmp, n, span, read, self.dask, progress
            )
            return writer.finish_parallel(n)
        except BaseException:
            writer.abort()
            raise

    def passes(self, data, cache: bool = False, threads: int | None = None) -> DaskPasses:
        return DaskPasses(self, data, cache)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None


# -- passes of the learners ------------------------------------------------------------------
def _store_slice(store_path, normalized, chunk_rows, start, stop, cache):
    """Worker side: rows ``start .. stop-1`` of a store; with ``cache`` their packed codes are
    read now and kept (the slice then lives in the worker's memory between passes)."""
    data = StoreData(FeatureStore(store_path), normalized, chunk_rows=chunk_rows,
                     cache_bytes=(1 << 62) if cache else 0, start=start, stop=stop)  # fmt: skip
    if cache:
        data.load()
    return data


def _apply(fn, part, *args):
    """Worker side: one pass function over one slice (a spec tuple is opened first)."""
    data = _store_slice(*part) if isinstance(part, tuple) else part
    with one_blas_thread():
        return fn(data, *args)


class DaskPasses:
    """Passes (see :mod:`rfcli.engines.base`) as one task per slice of rows, partial results
    summed by a tree reduction on the cluster.  Slices are whole multiples of the local
    engine's batch size, so every batch is the same as locally.

    ``data`` is a :class:`StoreData` or a :class:`RawData` of Parquet input (read and
    encoded by the workers).  ``cache``: a store's slices read their packed codes once and
    keep them in the workers' memory between passes (the SVM's hundreds of passes); a lost
    worker's slices are recomputed from the store by Dask."""

    def __init__(self, engine: DaskEngine, data, cache: bool = False):
        self.engine, self.data = engine, data
        self.client, self.progress = engine.client, engine.progress
        if isinstance(data, StoreData):
            self._over_store(data, cache)
        elif isinstance(data, RawData) and isinstance(data.source, ParquetSource):
            self._over_raw(data)
        else:
            raise UsageError(f"{PARQUET_ONLY} or a store")

    def _submit(self, fn, *args):
        return self.client.submit(fn, *args, retries=self.engine.dask.retries, pure=False)

    def _over_store(self, data: StoreData, cache: bool) -> None:
        store, step = data.store, data.chunk_rows
        span = step * max(1, -(-store.chunk_rows * CHUNKS_PER_TASK // step))
        ranges = [(a, min(a + span, data.n_rows)) for a in range(0, data.n_rows, span)]
        path = self.engine.worker_path(store.path)
        specs = [(path, data.normalized, step, a, b, cache) for a, b in ranges]
        self.sizes = [b - a for a, b in ranges]
        self.parts = [self._submit(_store_slice, *sp) for sp in specs] if cache else specs

    def _over_raw(self, data: RawData) -> None:
        step = data.chunk_rows
        span = step * max(1, SLICE_ROWS // step)
        ranges = [(a, min(a + span, data.n_rows)) for a in range(0, data.n_rows, span)]
        path = self.engine.worker_path(data.source.path)
        self.parts = [data.slice(a, b, path) for a, b in ranges]
        self.sizes = [b - a for a, b in ranges]

    @property
    def n_rows(self) -> int:
        return sum(self.sizes)

    def _leaves(self, fn, args, title):
        leaves = [self._submit(_apply, fn, part, *args) for part in self.parts]
        title = None if title is None else f"{title} (dask)"
        return _wait_in_order(leaves, self.progress, title, self.sizes)

    def reduce(self, fn, *args, title: str | None = None):
        level = self._leaves(fn, args, title)
        while len(level) > 1:
            nxt = [self.client.submit(add, level[i], level[i + 1], pure=False)
                   for i in range(0, len(level) - 1, 2)]  # fmt: skip
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0].result()

    def map_batches(self, fn, *args, title: str):
        """``fn(batch, *args)`` for every batch, in row order; each slice's results stay on
        the workers until fetched here one slice at a time."""
        for f in self._leaves(batch_results, (fn, args), title):
            yield from f.result()
            f.release()


__all__ = ["DaskEngine", "DaskPasses", "DaskSettings"]
