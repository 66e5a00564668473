"""The local engine: in this process, the encode runs chunks on a thread pool (NumPy
releases the GIL in GEMM, cos and packing) and writes them in row order; a learner's pass
runs its fixed row groups on the pass threads and adds their partial results in row order;
a fitting pass reads the input once, in the calling thread.  Everything computes with one
BLAS thread."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial
from typing import Any

from rfcli.engines.base import Engine, batch_results, sum_in_order
from rfcli.errors import InputError, Interrupted
from rfcli.io.readers import Chunk, iter_chunks
from rfcli.progress import NullProgress, Progress
from rfcli.threads import default_threads, one_blas_thread, ordered_results


def _advancing(chunks, task):
    """``chunks``, advancing a progress task by each chunk's rows."""
    for ch in chunks:
        yield ch
        task.advance(len(ch))


class _Tracked:
    """``data`` whose batches advance a progress task."""

    def __init__(self, data, task):
        self._data, self._task = data, task

    def batches(self, *args, **kw):
        for batch in self._data.batches(*args, **kw):
            yield batch
            self._task.advance(len(batch))

    def __getattr__(self, name):
        return getattr(self._data, name)


class LocalPasses:
    """A pass is reduced over the data's fixed row groups (:func:`~rfcli.engines.base.
    pass_groups`): ``fn`` runs on each group, on up to ``threads`` threads when the data
    can be read by several at once (a store, cached rows, Parquet or in-memory input), and
    the partial results are added in row order.  Every product runs on one BLAS thread (the
    engine's job-wide limit, :func:`rfcli.threads.one_blas_thread`).  So a pass gives the
    same numbers bit for bit for any thread count, cached or not.  Worker threads with one
    BLAS thread each also keep their speed when other processes share the cores, where
    multi-threaded BLAS calls on chunk-sized products lose most of theirs (measured:
    docs/learning.md, "The same model on any number of cores")."""

    def __init__(self, data, progress: Progress | None = None, threads: int = 1,
                 pool: ThreadPoolExecutor | None = None):  # fmt: skip
        self.data = data
        self.progress = progress or NullProgress()
        self.threads = threads
        self._pool = pool

    @property
    def n_rows(self) -> int:
        return self.data.n_rows

    def _groups(self) -> list:
        groups = getattr(self.data, "groups", None)
        return groups() if groups is not None else [self.data]

    def _parallel(self, n_groups: int) -> bool:
        return (
            self._pool is not None
            and self.threads > 1
            and n_groups > 1
            and getattr(self.data, "parallel_groups", False)
        )

    def reduce(self, fn: Callable[..., Any], *args: Any, title: str | None = None) -> Any:
        """``fn(data, *args)`` over all rows (see :mod:`rfcli.engines.base`)."""
        groups = self._groups()
        task_cm = self.progress.task(title, self.data.n_rows) if title else nullcontext()
        with one_blas_thread(), task_cm as task:
            if task is not None:
                groups = [_Tracked(g, task) for g in groups]
            # each group's partial sum added as it ends, in row order (bounded memory)
            if not self._parallel(len(groups)):
                return sum_in_order(fn(g, *args) for g in groups)
            jobs = [partial(fn, g, *args) for g in groups]
            return sum_in_order(ordered_results(self._pool, jobs, self.threads))

    def map_batches(self, fn: Callable[..., Any], *args: Any, title: str) -> Iterator[Any]:
        """``fn(batch, *args)`` for every batch (with its id columns), in row order: the
        batches of a group one after another, groups on the pool's threads."""
        groups = self._groups()
        with one_blas_thread(), self.progress.task(title, self.data.n_rows) as task:
            groups = [_Tracked(g, task) for g in groups]
            if not self._parallel(len(groups)):
                for g in groups:
                    for batch in g.batches(with_ids=True):
                        yield fn(batch, *args)
                return
            jobs = [partial(batch_results, g, fn, args) for g in groups]
            for outs in ordered_results(self._pool, jobs, self.threads):
                yield from outs


class LocalEngine(Engine):
    name = "local"

    def __init__(self, progress: Progress | None = None, threads: int | None = None):
        self.progress = progress or NullProgress()
        #: cores to use: encode worker threads and pass threads, each with one BLAS thread
        self.threads = threads or default_threads()
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor | None:
        """The job's pass threads (None with one thread), started when first needed."""
        if self._pool is None and self.threads > 1:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="rfcli-pass")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    whole_pass = True

    def chunk_pass(self, source, sel, read, fn, args: tuple, *, title: str) -> list:
        """One range, every row, in the calling thread (a stream is read once)."""
        with self.progress.task(title, source.num_rows) as task, one_blas_thread():
            return [fn(_advancing(iter_chunks(source, sel, read.chunk_rows, read.on_nan), task),
                       0, *args)]  # fmt: skip

    def write_store(self, source, sel, read, encoder, writer) -> str:
        """The chunk loop: chunks encoded on the thread pool (in the calling thread with one
        thread), written in row order.  An interruption keeps the partial store up to its
        last checkpoint (``--resume``)."""
        try:
            self._encode_loop(source, sel, read, encoder, writer)
            if writer.rows_written == 0:
                raise InputError(f"{source.path}: no rows to encode (empty input)")
            return writer.close()
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted; {writer.n_rows:,} encoded rows are kept in {writer.tmp} "
                "(run the same encode with resume to continue)",
                partial=writer.tmp,
                rows_kept=writer.n_rows,
            ) from None
        except BaseException:
            writer.abort()
            raise

    def _encode_loop(self, source, sel, read, encoder, writer) -> None:
        start = writer.rows_written  # > 0 when resuming
        threads = self.threads
        # results already in store chunks, whose arrays the next chunks are encoded into: the
        # loop touches no new memory for its outputs (each new page costs a fault and its
        # zeroing); a result the writer still holds rows of is left to it
        spare: deque = deque()

        def encode(ch):
            try:
                out = spare.popleft()  # atomic: worker threads share the deque
            except IndexError:
                out = None
            return encoder.encode_chunk(ch.X, ch.row0, out)

        def write(enc, ch):
            writer.write(enc, ch.label, ch.ids)
            if not writer.buffered_rows:
                spare.append(enc)

        with (
            self.progress.task("encoding", source.num_rows) as task,
            one_blas_thread(),  # each worker thread computes on one core
            ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool,
        ):
            pending: deque = deque()
            if start:
                task.advance(start)

            def drain(limit: int) -> None:
                while len(pending) > limit:
                    fut, ch = pending.popleft()
                    write(fut.result(), ch)
                    task.advance(len(ch))

            # column-major chunks: the reading thread copies each column once, and the
            # workers transpose their blocks (Encoder.encode_chunk)
            chunks = iter_chunks(source, sel, read.chunk_rows, read.on_nan, encoder.input_dtype,
                                 order="F")  # fmt: skip
            for ch in chunks:
                if ch.row0 + len(ch) <= start:
                    continue
                if ch.row0 < start:
                    ch = _tail(ch, start - ch.row0)
                if pool is None:  # one thread: read, encode and write in turn
                    write(encode(ch), ch)
                    task.advance(len(ch))
                    continue
                pending.append((pool.submit(encode, ch), ch))
                drain(2 * threads)
            drain(0)

    def passes(self, data, cache: bool = False, threads: int | None = None) -> LocalPasses:
        t = self.threads if threads is None else max(1, min(self.threads, int(threads)))
        return LocalPasses(data, self.progress, t, self.pool)


def _tail(ch: Chunk, k: int) -> Chunk:
    return Chunk(
        ch.row0 + k,
        ch.X[k:],
        None if ch.label is None else ch.label[k:],
        {n: v[k:] for n, v in ch.ids.items()},
    )
