"""The local engine: fitting passes and every learner's pass are sequential loops over all
rows in this process; the encode runs chunks on a thread pool (NumPy releases the GIL in
GEMM, cos and packing) and writes them in row order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from rfcli.encoder_fit import EncoderFitter
from rfcli.engines.base import Engine, add
from rfcli.errors import InputError, Interrupted
from rfcli.io.readers import Chunk, iter_chunks
from rfcli.progress import NullProgress, Progress
from rfcli.threads import blas_threads, default_threads


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


class _Part:
    """The i-th of k parts of ``data``'s cached chunks (a thread's share of a pass)."""

    def __init__(self, data, i: int, k: int):
        self._data, self._part = data, (i, k)

    def batches(self, *args, **kw):
        return self._data.batches(*args, part=self._part, **kw)

    def __getattr__(self, name):
        return getattr(self._data, name)


class LocalPasses:
    """A pass over data whose chunks are cached in memory runs on ``threads`` threads, each
    applying the pass function to every ``threads``-th chunk with one BLAS thread (the
    partial results are added, as the Dask engine adds its slices'); otherwise it is one
    sequential loop whose products use up to ``threads`` BLAS threads.  Worker threads
    with one BLAS thread each keep their speed when other processes share the cores,
    where multi-threaded BLAS calls on chunk-sized products lose most of theirs
    (measured: 3.4 s against 14.6 s for 35 SVM passes on letter with the two cores
    shared)."""

    def __init__(self, data, progress: Progress | None = None, threads: int = 1):
        self.data = data
        self.progress = progress or NullProgress()
        self.threads = threads

    @property
    def n_rows(self) -> int:
        return self.data.n_rows

    def reduce(self, fn: Callable[..., Any], *args: Any, title: str | None = None) -> Any:
        """``fn(data, *args)`` over all rows (see :mod:`rfcli.engines.base`)."""
        k = min(self.threads, getattr(self.data, "n_parts", 1))
        with self.progress.task(title, self.data.n_rows) if title else nullcontext() as task:
            data = self.data if task is None else _Tracked(self.data, task)
            if k <= 1:
                with blas_threads(self.threads):
                    return fn(data, *args)
            with blas_threads(1), ThreadPoolExecutor(k) as pool:
                parts = list(pool.map(lambda i: fn(_Part(data, i, k), *args), range(k)))
        out = parts[0]
        for p in parts[1:]:
            out = add(out, p)
        return out

    def map_batches(self, fn: Callable[..., Any], *args: Any, title: str) -> Iterator[Any]:
        """``fn(batch, *args)`` for every batch (with its id columns), in row order."""
        with self.progress.task(title, self.data.n_rows) as task:
            for batch in self.data.batches(with_ids=True):
                with blas_threads(self.threads):
                    out = fn(batch, *args)
                yield out
                task.advance(len(batch))


class LocalEngine(Engine):
    name = "local"

    def __init__(self, progress: Progress | None = None, threads: int | None = None):
        self.progress = progress or NullProgress()
        #: cores to use: encode worker threads (each with one BLAS thread), BLAS threads
        #: of the learners' sequential passes
        self.threads = threads or default_threads()

    def fit_encoder(self, source, sel, settings, read, fmap=None):
        """Build the encoder (for ``fmap`` if given, else the map ``settings`` describe),
        making the passes over the input that :class:`rfcli.encoder_fit.EncoderFitter`
        asks for."""
        fitter = EncoderFitter(settings, fmap)
        with blas_threads(self.threads):
            return self._fit_encoder(fitter, source, sel, read)

    def _fit_encoder(self, fitter, source, sel, read):
        progress = self.progress
        d = len(sel.features)
        total = fitter.n_passes + 1
        if fitter.needs_pass1:
            p1 = fitter.new_pass1(d)
            with progress.task(f"fitting (pass 1/{total})", source.num_rows) as t:
                for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
                    p1.update(ch.row0, ch.X, ch.label)
                    t.advance(len(ch))
            fitter.finish_pass1(p1, d, source.path)
        else:
            fitter.finish_pass1(None, d, source.path)
        if fitter.needs_map_pass:
            reducer = fitter.new_map_pass()
            with progress.task(f"fitting (pass {fitter.n_passes}/{total})", source.num_rows) as t:
                for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
                    reducer.update(ch.row0, fitter.map_values(ch.X))
                    t.advance(len(ch))
            fitter.finish_map_pass(reducer, source.path)
        return fitter.encoder(sel.features)

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
            blas_threads(1),  # each worker thread computes on one core
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

            chunks = iter_chunks(source, sel, read.chunk_rows, read.on_nan, encoder.input_dtype)
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

    def passes(self, data, cache: bool = False) -> LocalPasses:
        return LocalPasses(data, self.progress, self.threads)


def _tail(ch: Chunk, k: int) -> Chunk:
    return Chunk(
        ch.row0 + k,
        ch.X[k:],
        None if ch.label is None else ch.label[k:],
        {n: v[k:] for n, v in ch.ids.items()},
    )
